
op_GivenTensorStringFillYout0"GivenTensorStringFill*

values*	
shape*
extra_shape*
input_as_shape