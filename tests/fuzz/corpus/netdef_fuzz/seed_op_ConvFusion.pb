
op_ConvFusioná
in0
in1out0"
ConvFusion*

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
enable_tensor_core*
fusion_type*

activation*
activation_alpha*
activation_min*
activation_max:in0:in1