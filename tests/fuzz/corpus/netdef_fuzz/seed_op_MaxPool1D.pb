
op_MaxPool1D‡
in0out0"	MaxPool1D*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
storage_order:in0