
op_GTF
in0
in1out0"GT*
	broadcast*
axis*
axis_str*	
order:in0:in1