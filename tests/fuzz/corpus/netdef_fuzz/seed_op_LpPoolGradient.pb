
op_LpPoolGradientŠ
in0
in1
in2out0"LpPoolGradient*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling*
p:in0:in1:in2