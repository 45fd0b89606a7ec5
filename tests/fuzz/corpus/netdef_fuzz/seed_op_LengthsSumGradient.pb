
op_LengthsSumGradient$
in0
in1out0"LengthsSumGradient:in0:in1