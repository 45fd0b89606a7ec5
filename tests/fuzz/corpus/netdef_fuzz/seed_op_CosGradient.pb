
op_CosGradient
in0
in1out0"CosGradient:in0:in1