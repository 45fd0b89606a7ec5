
op_LabelCrossEntropyGradient0
in0
in1
in2out0"LabelCrossEntropyGradient:in0:in1:in2