
0op_SparseLengthsWeightedSumWithMainInputGradientO
in0
in1
in2
in3out0out1"-SparseLengthsWeightedSumWithMainInputGradient:in0:in1:in2:in3