

op_MaxPoold
in0out0"MaxPool*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling:in0