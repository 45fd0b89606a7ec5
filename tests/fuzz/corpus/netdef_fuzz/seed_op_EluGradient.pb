
op_EluGradient(
in0
in1out0"EluGradient*	
alpha:in0:in1