
op_UnsortedSegmentSumGradient,
in0
in1out0"UnsortedSegmentSumGradient:in0:in1