
op_GatherFused8BitRowwise(
in0
in1out0"GatherFused8BitRowwise:in0:in1