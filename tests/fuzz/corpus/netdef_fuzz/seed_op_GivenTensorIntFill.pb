
op_GivenTensorIntFillVout0"GivenTensorIntFill*

values*	
shape*
extra_shape*
input_as_shape