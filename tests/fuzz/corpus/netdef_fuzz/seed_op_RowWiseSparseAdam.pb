
op_RowWiseSparseAdam\
in0
in1
in2
in3out0out1out2"RowWiseSparseAdam*	
beta1*	
beta2*
epsilon:in0:in1:in2:in3