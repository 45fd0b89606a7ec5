
op_RoIAlignu
in0
in1out0"RoIAlign*
spatial_scale*
pooled_h*
pooled_w*
sampling_ratio*
aligned*	
order:in0:in1