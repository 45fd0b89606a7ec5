
op_FCTransposedGradient\
in0
in1
in2out0out1"FCTransposedGradient*
axis*

axis_w*
float16_compute:in0:in1:in2