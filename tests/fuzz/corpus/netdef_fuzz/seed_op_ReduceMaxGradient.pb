
op_ReduceMaxGradient@
in0
in1
in2out0"ReduceMaxGradient*
axes*
keepdims:in0:in1:in2