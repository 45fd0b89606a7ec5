
op_GivenTensorFill^out0"GivenTensorFill*

values*	
shape*
extra_shape*
input_as_shape*	
dtype