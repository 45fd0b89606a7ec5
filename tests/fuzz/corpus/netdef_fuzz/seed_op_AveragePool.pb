
op_AveragePoolç
in0out0"AveragePool*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
count_include_pad:in0