
op_ReduceSumGradient@
in0
in1
in2out0"ReduceSumGradient*
axes*
keepdims:in0:in1:in2