
op_TopKGradient#
in0
in1
in2out0"TopKGradient:in0:in1:in2