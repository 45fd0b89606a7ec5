
	op_Gather6
in0
in1out0"Gather*
axis*
dense_gradient:in0:in1