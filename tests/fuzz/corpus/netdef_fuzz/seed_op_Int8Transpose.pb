
op_Int8TransposeC
in0out0"Int8Transpose*
Y_scale*
Y_zero_point*
axes:in0