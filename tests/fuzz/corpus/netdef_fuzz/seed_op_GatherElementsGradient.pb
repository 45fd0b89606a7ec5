
op_GatherElementsGradient7
in0
in1
in2out0"GatherElementsGradient*
axis:in0:in1:in2