
op_ReduceFrontSum/
in0out0"ReduceFrontSum*
num_reduce_dim:in0