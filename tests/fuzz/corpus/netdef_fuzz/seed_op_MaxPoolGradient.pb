
op_MaxPoolGradient„
in0
in1
in2out0"MaxPoolGradient*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling:in0:in1:in2