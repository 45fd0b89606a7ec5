
op_DotProductGradient/
in0
in1
in2out0out1"DotProductGradient:in0:in1:in2