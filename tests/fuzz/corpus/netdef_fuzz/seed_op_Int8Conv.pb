
op_Int8Conv~
in0
in1out0"Int8Conv*

kernel*

stride*
pad*
dilation*	
group*	
order*
Y_scale*
Y_zero_point:in0:in1