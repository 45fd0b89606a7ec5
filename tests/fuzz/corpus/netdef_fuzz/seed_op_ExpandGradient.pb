
op_ExpandGradient 
in0
in1out0"ExpandGradient:in0:in1