
op_AtanhGradient
in0
in1out0"AtanhGradient:in0:in1