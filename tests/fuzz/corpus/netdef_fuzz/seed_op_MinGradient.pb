
op_MinGradient"
in0
in1
in2out0"MinGradient:in0:in1:in2