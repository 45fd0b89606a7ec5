
op_Int8Conv~
in0
in1out0"Int8Conv*

kernel*

stride*
pad*	
order*
Y_scale*
Y_zero_point*
dilation*	
group:in0:in1