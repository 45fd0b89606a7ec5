
op_ReduceBackMaxGradient@
in0
in1
in2out0"ReduceBackMaxGradient*
num_reduce_dim:in0:in1:in2