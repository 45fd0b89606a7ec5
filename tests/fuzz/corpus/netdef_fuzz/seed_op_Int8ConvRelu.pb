
op_Int8ConvRelu‚
in0
in1out0"Int8ConvRelu*

kernel*

stride*
pad*	
order*
Y_scale*
Y_zero_point*
dilation*	
group:in0:in1