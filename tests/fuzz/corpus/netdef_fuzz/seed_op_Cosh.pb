
op_Cosh
in0out0"Cosh:in0