
op_AtanGradient
in0
in1out0"AtanGradient:in0:in1