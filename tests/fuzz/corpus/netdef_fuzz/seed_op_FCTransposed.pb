
op_FCTransposedN
in0
in1
in2out0"FCTransposed*
axis*

axis_w*
float16_compute:in0:in1:in2