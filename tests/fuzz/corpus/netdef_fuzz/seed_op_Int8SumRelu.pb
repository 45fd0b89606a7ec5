
op_Int8SumRelu7
in0out0"Int8SumRelu*
Y_scale*
Y_zero_point:in0