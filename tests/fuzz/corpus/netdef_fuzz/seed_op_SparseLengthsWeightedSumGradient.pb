
#op_SparseLengthsWeightedSumGradient7
in0
in1
in2out0" SparseLengthsWeightedSumGradient:in0:in1:in2