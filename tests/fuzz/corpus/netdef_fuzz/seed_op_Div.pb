
op_DivG
in0
in1out0"Div*
	broadcast*
axis*
axis_str*	
order:in0:in1