
op_ReduceFrontMax/
in0out0"ReduceFrontMax*
num_reduce_dim:in0