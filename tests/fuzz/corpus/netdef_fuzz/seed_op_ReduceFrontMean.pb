
op_ReduceFrontMean0
in0out0"ReduceFrontMean*
num_reduce_dim:in0