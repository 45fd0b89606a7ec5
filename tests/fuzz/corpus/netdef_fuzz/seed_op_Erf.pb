
op_Erf
in0out0"Erf:in0