
op_ColwiseMaxGradient)
in0
in1
in2out0"ColwiseMaxGradient:in0:in1:in2