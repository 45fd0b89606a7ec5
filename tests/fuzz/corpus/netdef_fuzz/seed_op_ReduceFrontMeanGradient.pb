
op_ReduceFrontMeanGradient=
in0
in1out0"ReduceFrontMeanGradient*
num_reduce_dim:in0:in1