
op_Int8AveragePoolReluè
in0out0"Int8AveragePoolRelu*

kernel*

stride*
pad*
global_pooling*

legacy_pad*	
order*
Y_scale*
Y_zero_point:in0