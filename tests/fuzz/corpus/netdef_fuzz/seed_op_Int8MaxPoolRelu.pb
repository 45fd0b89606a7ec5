
op_Int8MaxPoolRelu‹
in0out0"Int8MaxPoolRelu*

kernel*

stride*
pad*
global_pooling*

legacy_pad*	
order*
Y_scale*
Y_zero_point:in0