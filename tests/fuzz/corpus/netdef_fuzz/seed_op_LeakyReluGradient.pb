
op_LeakyReluGradient.
in0
in1out0"LeakyReluGradient*	
alpha:in0:in1