
op_ReduceBackMean/
in0out0"ReduceBackMean*
num_reduce_dim:in0