
op_LRND
in0out0"LRN*
size*	
alpha*
beta*
bias*	
order:in0