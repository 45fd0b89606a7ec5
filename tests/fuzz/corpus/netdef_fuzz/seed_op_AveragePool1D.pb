
op_AveragePool1Dè
in0out0"AveragePool1D*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
count_include_pad:in0