
op_SigmoidGradient!
in0
in1out0"SigmoidGradient:in0:in1