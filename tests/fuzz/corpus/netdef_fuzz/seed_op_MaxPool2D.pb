
op_MaxPool2Df
in0out0"	MaxPool2D*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling:in0