
op_AcosGradient
in0
in1out0"AcosGradient:in0:in1