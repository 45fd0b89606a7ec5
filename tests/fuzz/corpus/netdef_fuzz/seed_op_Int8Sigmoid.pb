
op_Int8Sigmoid7
in0out0"Int8Sigmoid*
Y_scale*
Y_zero_point:in0