
op_ResizeNearestGradientU
in0
in1out0"ResizeNearestGradient*
height_scale*
width_scale*	
order:in0:in1