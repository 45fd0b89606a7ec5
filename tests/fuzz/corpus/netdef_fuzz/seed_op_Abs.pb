
op_Abs
in0out0"Abs:in0