
	op_LpPoolj
in0out0"LpPool*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling*
p:in0