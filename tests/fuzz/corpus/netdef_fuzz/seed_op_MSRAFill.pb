
op_MSRAFill@out0"MSRAFill*	
shape*
extra_shape*
input_as_shape