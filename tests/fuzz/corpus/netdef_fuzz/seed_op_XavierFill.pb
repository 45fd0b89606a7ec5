
op_XavierFillBout0"
XavierFill*	
shape*
extra_shape*
input_as_shape