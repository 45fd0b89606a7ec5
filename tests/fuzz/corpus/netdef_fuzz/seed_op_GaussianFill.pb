
op_GaussianFillWout0"GaussianFill*
mean*
std*	
shape*
extra_shape*
input_as_shape