
op_FCTransposedGradientm
in0
in1
in2out0out1"FCTransposedGradient*
axis*

axis_w*
float16_compute*
fusion_type:in0:in1:in2