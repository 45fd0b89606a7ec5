
op_ReduceMean/
in0out0"
ReduceMean*
axes*
keepdims:in0