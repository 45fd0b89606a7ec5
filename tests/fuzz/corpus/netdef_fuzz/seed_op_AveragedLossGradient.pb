
op_AveragedLossGradient&
in0
in1out0"AveragedLossGradient:in0:in1