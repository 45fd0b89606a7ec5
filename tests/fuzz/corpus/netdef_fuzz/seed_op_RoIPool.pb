

op_RoIPool`
in0
in1out0"RoIPool*
is_test*
spatial_scale*
pooled_h*
pooled_w*	
order:in0:in1