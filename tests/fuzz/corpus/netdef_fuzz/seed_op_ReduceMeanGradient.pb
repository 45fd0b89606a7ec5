
op_ReduceMeanGradientA
in0
in1
in2out0"ReduceMeanGradient*
axes*
keepdims:in0:in1:in2