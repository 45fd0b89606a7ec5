
op_SparseLengthsSumGradient*
in0
in1out0"SparseLengthsSumGradient:in0:in1