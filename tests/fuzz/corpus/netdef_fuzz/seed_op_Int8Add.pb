

op_Int8Add8
in0
in1out0"Int8Add*
Y_scale*
Y_zero_point:in0:in1