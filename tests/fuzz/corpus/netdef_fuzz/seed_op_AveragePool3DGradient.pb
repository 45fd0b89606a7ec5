
op_AveragePool3DGradient¡
in0
in1
in2out0"AveragePool3DGradient*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
count_include_pad:in0:in1:in2