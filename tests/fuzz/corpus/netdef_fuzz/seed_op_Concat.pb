
	op_Concat<
in0out0out1"Concat*
axis*	
order*
add_axis:in0