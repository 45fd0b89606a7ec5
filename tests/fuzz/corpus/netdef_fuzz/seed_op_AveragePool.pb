
op_AveragePool
in0out0"AveragePool*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling*
count_include_pad:in0