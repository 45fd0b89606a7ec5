
op_FCU
in0
in1
in2out0"FC*
axis*

axis_w*
float16_compute*
fusion_type:in0:in1:in2