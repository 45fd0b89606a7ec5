
op_Int8SoftmaxA
in0out0"Int8Softmax*
Y_scale*
Y_zero_point*
axis:in0