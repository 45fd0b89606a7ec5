
op_FCGradientc
in0
in1
in2out0out1"
FCGradient*
axis*

axis_w*
float16_compute*
fusion_type:in0:in1:in2