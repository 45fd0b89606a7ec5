
op_SinGradient
in0
in1out0"SinGradient:in0:in1