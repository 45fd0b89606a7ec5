
op_SquaredL2DistanceGradient6
in0
in1
in2out0out1"SquaredL2DistanceGradient:in0:in1:in2