
op_Int8Relu4
in0out0"Int8Relu*
Y_scale*
Y_zero_point:in0