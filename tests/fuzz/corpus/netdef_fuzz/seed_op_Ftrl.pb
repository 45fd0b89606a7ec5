
op_FtrlP
in0
in1
in2out0out1"Ftrl*	
alpha*
beta*
lambda1*
lambda2:in0:in1:in2