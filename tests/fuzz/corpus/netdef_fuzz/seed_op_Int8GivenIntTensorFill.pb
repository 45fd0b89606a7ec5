
op_Int8GivenIntTensorFillTout0"Int8GivenIntTensorFill*

values*	
shape*
Y_scale*
Y_zero_point