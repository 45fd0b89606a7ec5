
op_MulG
in0
in1out0"Mul*
	broadcast*
axis*
axis_str*	
order:in0:in1