
op_Neg
in0out0"Neg:in0