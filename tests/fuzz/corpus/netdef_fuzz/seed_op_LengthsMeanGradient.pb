
op_LengthsMeanGradient%
in0
in1out0"LengthsMeanGradient:in0:in1