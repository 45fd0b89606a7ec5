
op_RowWiseSparseAdagradC
in0
in1
in2
in3out0out1"RowWiseSparseAdagrad*
epsilon:in0:in1:in2:in3