
+op_SparseLengthsWeightedSumFused8BitRowwiseD
in0
in1
in2
in3out0"(SparseLengthsWeightedSumFused8BitRowwise:in0:in1:in2:in3