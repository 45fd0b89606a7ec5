
op_Int8FlattenA
in0out0"Int8Flatten*
Y_scale*
Y_zero_point*
axis:in0