
op_Conv2DGradient>
in0
in1
in2out0"Conv2DGradient*
no_bias*

kernel:in0:in1:in2