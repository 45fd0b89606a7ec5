
op_Atan
in0out0"Atan:in0