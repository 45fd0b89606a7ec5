
op_Cos
in0out0"Cos:in0