
op_SparseAdagrad<
in0
in1
in2
in3out0out1"SparseAdagrad*
epsilon:in0:in1:in2:in3