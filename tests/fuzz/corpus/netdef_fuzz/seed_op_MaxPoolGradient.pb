
op_MaxPoolGradientv
in0
in1
in2out0"MaxPoolGradient*

kernel*

stride*
pad*	
order*

legacy_pad*
global_pooling:in0:in1:in2