
op_UniformFillUout0"UniformFill*
min*
max*	
shape*
extra_shape*
input_as_shape