
op_Conv3DGradient>
in0
in1
in2out0"Conv3DGradient*
no_bias*

kernel:in0:in1:in2