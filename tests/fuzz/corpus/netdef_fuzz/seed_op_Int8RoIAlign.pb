
op_Int8RoIAlign˜
in0
in1out0"Int8RoIAlign*
spatial_scale*
pooled_h*
pooled_w*
sampling_ratio*
aligned*	
order*
Y_scale*
Y_zero_point:in0:in1