
op_SumElementsGradient2
in0
in1out0"SumElementsGradient*
average:in0:in1