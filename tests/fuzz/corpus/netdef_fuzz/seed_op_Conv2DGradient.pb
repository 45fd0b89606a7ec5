
op_Conv2DGradientR
in0
in1
in2out0"Conv2DGradient*
no_bias*

kernel*
conv_algorithm:in0:in1:in2