
op_NCHW2NHWC
in0out0"	NCHW2NHWC:in0