
op_SparseFtrl[
in0
in1
in2
in3out0out1"
SparseFtrl*	
alpha*
beta*
lambda1*
lambda2:in0:in1:in2:in3