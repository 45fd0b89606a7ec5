
op_Int8ReshapeH
in0out0out1"Int8Reshape*
Y_scale*
Y_zero_point*	
shape:in0