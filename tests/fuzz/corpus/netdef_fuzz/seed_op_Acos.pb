
op_Acos
in0out0"Acos:in0