
op_ElementwiseLinearGradientF
in0
in1
in2out0out1out2"ElementwiseLinearGradient*
axis:in0:in1:in2