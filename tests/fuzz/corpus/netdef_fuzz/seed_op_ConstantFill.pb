
op_ConstantFillZout0"ConstantFill*	
value*	
dtype*	
shape*
extra_shape*
input_as_shape