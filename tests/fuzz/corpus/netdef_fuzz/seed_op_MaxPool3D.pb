
op_MaxPool3Df
in0out0"	MaxPool3D*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling:in0