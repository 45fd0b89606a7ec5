
op_Int8Quantize8
in0out0"Int8Quantize*
Y_scale*
Y_zero_point:in0