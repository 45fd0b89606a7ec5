
op_SparseLengthsMeanGradient+
in0
in1out0"SparseLengthsMeanGradient:in0:in1