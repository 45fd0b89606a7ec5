
op_PowP
in0out0"Pow*
exponent*
	broadcast*
axis*
axis_str*	
order:in0