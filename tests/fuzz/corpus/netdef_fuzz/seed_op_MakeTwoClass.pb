
op_MakeTwoClass
in0out0"MakeTwoClass:in0