
op_LogSoftmaxGradient.
in0
in1out0"LogSoftmaxGradient*
axis:in0:in1