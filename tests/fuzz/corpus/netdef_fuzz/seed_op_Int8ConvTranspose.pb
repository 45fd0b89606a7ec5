
op_Int8ConvTransposew
in0
in1out0"Int8ConvTranspose*

kernel*

stride*
pad*	
order*
Y_scale*
Y_zero_point*
adj:in0:in1