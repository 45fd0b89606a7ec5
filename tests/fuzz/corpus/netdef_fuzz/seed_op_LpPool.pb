
	op_LpPoolx
in0out0"LpPool*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
p:in0