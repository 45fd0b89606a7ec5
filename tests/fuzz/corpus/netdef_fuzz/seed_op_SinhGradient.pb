
op_SinhGradient
in0
in1out0"SinhGradient:in0:in1