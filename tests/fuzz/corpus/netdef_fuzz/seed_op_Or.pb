
op_OrF
in0
in1out0"Or*
	broadcast*
axis*
axis_str*	
order:in0:in1