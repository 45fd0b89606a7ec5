
op_GivenTensorInt64FillXout0"GivenTensorInt64Fill*

values*	
shape*
extra_shape*
input_as_shape