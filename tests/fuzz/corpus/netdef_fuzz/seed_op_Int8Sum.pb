

op_Int8Sum3
in0out0"Int8Sum*
Y_scale*
Y_zero_point:in0