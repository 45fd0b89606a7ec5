
op_ConvGradient<
in0
in1
in2out0"ConvGradient*
no_bias*

kernel:in0:in1:in2