
op_SubG
in0
in1out0"Sub*
	broadcast*
axis*
axis_str*	
order:in0:in1