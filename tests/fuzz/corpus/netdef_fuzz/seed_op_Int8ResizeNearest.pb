
op_Int8ResizeNearest`
in0out0"Int8ResizeNearest*
Y_scale*
Y_zero_point*
width_scale*
height_scale:in0