
op_ErfGradient
in0
in1out0"ErfGradient:in0:in1