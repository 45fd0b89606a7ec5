
op_WeightedSumGradient9
in0
in1
in2out0"WeightedSumGradient*
	grad_on_w:in0:in1:in2