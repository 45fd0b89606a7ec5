
op_Int8GivenTensorFillQout0"Int8GivenTensorFill*

values*	
shape*
Y_scale*
Y_zero_point