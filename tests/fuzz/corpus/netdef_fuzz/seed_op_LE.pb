
op_LEF
in0
in1out0"LE*
	broadcast*
axis*
axis_str*	
order:in0:in1