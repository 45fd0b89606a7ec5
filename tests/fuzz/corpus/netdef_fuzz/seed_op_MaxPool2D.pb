
op_MaxPool2D‡
in0out0"	MaxPool2D*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
storage_order:in0