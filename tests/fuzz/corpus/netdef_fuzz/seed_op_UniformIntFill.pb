
op_UniformIntFillXout0"UniformIntFill*
min*
max*	
shape*
extra_shape*
input_as_shape