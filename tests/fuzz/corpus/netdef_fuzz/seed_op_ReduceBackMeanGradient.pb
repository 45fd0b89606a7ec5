
op_ReduceBackMeanGradient<
in0
in1out0"ReduceBackMeanGradient*
num_reduce_dim:in0:in1