
op_Int8ConvRelu‚
in0
in1out0"Int8ConvRelu*

kernel*

stride*
pad*
dilation*	
group*	
order*
Y_scale*
Y_zero_point:in0:in1