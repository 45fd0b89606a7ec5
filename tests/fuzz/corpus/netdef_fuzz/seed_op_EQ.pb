
op_EQF
in0
in1out0"EQ*
	broadcast*
axis*
axis_str*	
order:in0:in1