
op_ReduceBackSum.
in0out0"ReduceBackSum*
num_reduce_dim:in0