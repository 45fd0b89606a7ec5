
op_ReduceBackSumGradient;
in0
in1out0"ReduceBackSumGradient*
num_reduce_dim:in0:in1