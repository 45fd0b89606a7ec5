
op_GivenTensorDoubleFillYout0"GivenTensorDoubleFill*

values*	
shape*
extra_shape*
input_as_shape