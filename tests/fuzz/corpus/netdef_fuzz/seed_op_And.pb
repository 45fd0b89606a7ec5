
op_AndG
in0
in1out0"And*
	broadcast*
axis*
axis_str*	
order:in0:in1