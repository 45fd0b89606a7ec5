
op_MaxPool2DGradient†
in0
in1
in2out0"MaxPool2DGradient*

kernel*

stride*
pad*	
order*

legacy_pad*
dilation*
global_pooling:in0:in1:in2