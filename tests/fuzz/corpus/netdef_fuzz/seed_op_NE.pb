
op_NEF
in0
in1out0"NE*
	broadcast*
axis*
axis_str*	
order:in0:in1