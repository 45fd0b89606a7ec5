
op_ReluGradient
in0
in1out0"ReluGradient:in0:in1