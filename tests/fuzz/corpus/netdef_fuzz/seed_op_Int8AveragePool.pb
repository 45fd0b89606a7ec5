
op_Int8AveragePool‹
in0out0"Int8AveragePool*

kernel*

stride*
pad*
global_pooling*

legacy_pad*	
order*
Y_scale*
Y_zero_point:in0