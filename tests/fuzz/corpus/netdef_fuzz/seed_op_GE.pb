
op_GEF
in0
in1out0"GE*
	broadcast*
axis*
axis_str*	
order:in0:in1