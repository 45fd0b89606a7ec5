
op_Int8AddRelu<
in0
in1out0"Int8AddRelu*
Y_scale*
Y_zero_point:in0:in1