
op_Acosh
in0out0"Acosh:in0