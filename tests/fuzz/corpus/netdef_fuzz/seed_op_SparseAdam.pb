
op_SparseAdamU
in0
in1
in2
in3out0out1out2"
SparseAdam*	
beta1*	
beta2*
epsilon:in0:in1:in2:in3