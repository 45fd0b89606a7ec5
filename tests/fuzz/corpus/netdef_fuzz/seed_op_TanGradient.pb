
op_TanGradient
in0
in1out0"TanGradient:in0:in1