
op_GivenTensorBoolFillWout0"GivenTensorBoolFill*

values*	
shape*
extra_shape*
input_as_shape