
op_AddG
in0
in1out0"Add*
	broadcast*
axis*
axis_str*	
order:in0:in1