
op_ConvTransposeê
in0
in1out0"ConvTranspose*

kernel*

stride*
pad*
adj*
dilation*	
group*	
order*

legacy_pad*
shared_buffer:in0:in1