
op_Int8ConcatK
in0out0"
Int8Concat*
Y_scale*
Y_zero_point*
axis*	
order:in0