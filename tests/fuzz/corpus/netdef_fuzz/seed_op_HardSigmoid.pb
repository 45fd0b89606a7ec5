
op_HardSigmoid-
in0out0"HardSigmoid*	
alpha*
beta:in0