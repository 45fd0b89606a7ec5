
op_RoIAlignRotated|
in0
in1out0"RoIAlignRotated*
spatial_scale*
pooled_h*
pooled_w*
sampling_ratio*
aligned*	
order:in0:in1