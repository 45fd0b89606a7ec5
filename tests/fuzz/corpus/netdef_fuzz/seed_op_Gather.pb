
	op_GatherH
in0
in1out0"Gather*
axis*
dense_gradient*
wrap_indices:in0:in1