
op_AsinhGradient
in0
in1out0"AsinhGradient:in0:in1