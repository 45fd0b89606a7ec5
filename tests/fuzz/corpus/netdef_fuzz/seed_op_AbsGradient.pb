
op_AbsGradient
in0
in1out0"AbsGradient:in0:in1