
op_ReduceFrontMaxGradientA
in0
in1
in2out0"ReduceFrontMaxGradient*
num_reduce_dim:in0:in1:in2