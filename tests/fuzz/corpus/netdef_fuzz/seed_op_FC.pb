
op_FCD
in0
in1
in2out0"FC*
axis*

axis_w*
float16_compute:in0:in1:in2