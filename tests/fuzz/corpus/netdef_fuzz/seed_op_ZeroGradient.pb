
op_ZeroGradient
in0out0"ZeroGradient:in0