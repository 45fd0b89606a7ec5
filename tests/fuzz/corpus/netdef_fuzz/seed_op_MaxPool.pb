

op_MaxPool…
in0out0"MaxPool*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
storage_order:in0