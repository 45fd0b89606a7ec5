
(op_WeightedSigmoidCrossEntropyWithLogits<
in0
in1
in2out0"%WeightedSigmoidCrossEntropyWithLogits:in0:in1:in2