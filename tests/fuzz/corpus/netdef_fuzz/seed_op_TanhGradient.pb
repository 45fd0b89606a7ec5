
op_TanhGradient
in0
in1out0"TanhGradient:in0:in1