
op_Int8SliceK
in0out0"	Int8Slice*
Y_scale*
Y_zero_point*

starts*
ends:in0