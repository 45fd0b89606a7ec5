
op_Negative
in0out0"Negative:in0