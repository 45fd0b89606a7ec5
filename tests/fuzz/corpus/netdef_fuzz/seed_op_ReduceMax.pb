
op_ReduceMax.
in0out0"	ReduceMax*
axes*
keepdims:in0