
op_SoftplusGradient"
in0
in1out0"SoftplusGradient:in0:in1