
op_MaxPool3D‡
in0out0"	MaxPool3D*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
storage_order:in0