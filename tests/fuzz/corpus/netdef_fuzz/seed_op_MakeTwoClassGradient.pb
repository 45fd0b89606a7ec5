
op_MakeTwoClassGradient!
in0out0"MakeTwoClassGradient:in0