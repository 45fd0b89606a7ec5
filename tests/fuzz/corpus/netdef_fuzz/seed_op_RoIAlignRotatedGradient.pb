
op_RoIAlignRotatedGradient‰
in0
in1
in2out0"RoIAlignRotatedGradient*
spatial_scale*
pooled_h*
pooled_w*
sampling_ratio*
aligned*	
order:in0:in1:in2