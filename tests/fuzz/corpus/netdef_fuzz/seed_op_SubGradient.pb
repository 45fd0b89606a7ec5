
op_SubGradientZ
in0
in1
in2out0out1"SubGradient*
	broadcast*
axis*
axis_str*	
order:in0:in1:in2