
op_Atanh
in0out0"Atanh:in0