
op_AsinGradient
in0
in1out0"AsinGradient:in0:in1