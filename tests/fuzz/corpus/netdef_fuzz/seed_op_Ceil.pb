
op_Ceil
in0out0"Ceil:in0