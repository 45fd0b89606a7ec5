
op_ClipTensorByScaling4
in0
in1out0"ClipTensorByScaling*
	threshold:in0:in1