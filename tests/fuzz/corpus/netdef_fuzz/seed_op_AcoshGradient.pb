
op_AcoshGradient
in0
in1out0"AcoshGradient:in0:in1