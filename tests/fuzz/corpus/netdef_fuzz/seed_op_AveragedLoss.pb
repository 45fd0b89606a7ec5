
op_AveragedLoss
in0out0"AveragedLoss:in0