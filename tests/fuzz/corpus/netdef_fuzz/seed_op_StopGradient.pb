
op_StopGradient
in0out0"StopGradient:in0