
op_Exp
in0out0"Exp:in0