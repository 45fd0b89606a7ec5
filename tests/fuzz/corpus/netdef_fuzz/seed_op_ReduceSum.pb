
op_ReduceSum.
in0out0"	ReduceSum*
axes*
keepdims:in0