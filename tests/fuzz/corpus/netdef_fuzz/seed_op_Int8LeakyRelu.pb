
op_Int8LeakyReluD
in0out0"Int8LeakyRelu*
Y_scale*
Y_zero_point*	
alpha:in0