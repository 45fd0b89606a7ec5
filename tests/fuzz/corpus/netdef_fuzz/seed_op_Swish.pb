
op_Swish
in0out0"Swish:in0