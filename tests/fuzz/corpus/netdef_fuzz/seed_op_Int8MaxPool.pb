
op_Int8MaxPool‡
in0out0"Int8MaxPool*

kernel*

stride*
pad*
global_pooling*

legacy_pad*	
order*
Y_scale*
Y_zero_point:in0