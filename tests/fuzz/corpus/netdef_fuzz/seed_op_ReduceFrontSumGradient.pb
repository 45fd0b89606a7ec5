
op_ReduceFrontSumGradient<
in0
in1out0"ReduceFrontSumGradient*
num_reduce_dim:in0:in1