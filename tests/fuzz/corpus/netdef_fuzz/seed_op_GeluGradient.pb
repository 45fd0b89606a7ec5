
op_GeluGradient-
in0
in1out0"GeluGradient*
	fast_gelu:in0:in1