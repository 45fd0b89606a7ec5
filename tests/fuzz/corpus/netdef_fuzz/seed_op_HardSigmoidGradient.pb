
op_HardSigmoidGradient:
in0
in1out0"HardSigmoidGradient*	
alpha*
beta:in0:in1