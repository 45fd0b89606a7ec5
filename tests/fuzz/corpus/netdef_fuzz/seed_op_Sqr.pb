
op_Sqr
in0out0"Sqr:in0