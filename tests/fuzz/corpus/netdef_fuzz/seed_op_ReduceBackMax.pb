
op_ReduceBackMax.
in0out0"ReduceBackMax*
num_reduce_dim:in0