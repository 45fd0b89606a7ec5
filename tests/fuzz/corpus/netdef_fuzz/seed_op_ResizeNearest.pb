
op_ResizeNearestH
in0out0"ResizeNearest*
height_scale*
width_scale*	
order:in0