
op_LTF
in0
in1out0"LT*
	broadcast*
axis*
axis_str*	
order:in0:in1