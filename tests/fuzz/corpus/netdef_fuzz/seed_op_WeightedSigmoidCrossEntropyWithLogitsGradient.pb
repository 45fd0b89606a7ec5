
0op_WeightedSigmoidCrossEntropyWithLogitsGradientI
in0
in1
in2
in3out0"-WeightedSigmoidCrossEntropyWithLogitsGradient:in0:in1:in2:in3