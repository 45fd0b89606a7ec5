
op_Conv1DGradientR
in0
in1
in2out0"Conv1DGradient*
no_bias*

kernel*
conv_algorithm:in0:in1:in2