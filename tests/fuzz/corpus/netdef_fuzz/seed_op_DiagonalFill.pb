
op_DiagonalFillZout0"DiagonalFill*	
value*	
dtype*	
shape*
extra_shape*
input_as_shape