
	op_Conv2Dþ
in0
in1out0"Conv2D*

kernel*

stride*
pad*
dilation*	
group*	
order*

legacy_pad*
shared_buffer*
training_mode*
conv_algorithm*
ws_nbytes_limit*
deterministic*
exhaustive_search*
enable_tensor_core:in0:in1