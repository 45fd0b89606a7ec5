
op_SoftmaxGradient+
in0
in1out0"SoftmaxGradient*
axis:in0:in1