
op_ConvGradientP
in0
in1
in2out0"ConvGradient*
no_bias*

kernel*
conv_algorithm:in0:in1:in2