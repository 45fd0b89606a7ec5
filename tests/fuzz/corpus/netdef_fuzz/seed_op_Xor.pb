
op_XorG
in0
in1out0"Xor*
	broadcast*
axis*
axis_str*	
order:in0:in1