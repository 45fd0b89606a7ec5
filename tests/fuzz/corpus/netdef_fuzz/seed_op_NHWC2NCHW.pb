
op_NHWC2NCHW
in0out0"	NHWC2NCHW:in0