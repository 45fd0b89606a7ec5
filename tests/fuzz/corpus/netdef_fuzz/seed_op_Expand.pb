
	op_Expand
in0
in1out0"Expand:in0:in1