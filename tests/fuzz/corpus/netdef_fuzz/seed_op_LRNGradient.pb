
op_LRNGradientV
in0
in1
in2out0"LRNGradient*
size*	
alpha*
beta*
bias*	
order:in0:in1:in2