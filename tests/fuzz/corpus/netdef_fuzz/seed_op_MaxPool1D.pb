
op_MaxPool1Df
in0out0"	MaxPool1D*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling:in0