
op_CoshGradient
in0
in1out0"CoshGradient:in0:in1