
op_RowwiseMaxGradient)
in0
in1
in2out0"RowwiseMaxGradient:in0:in1:in2