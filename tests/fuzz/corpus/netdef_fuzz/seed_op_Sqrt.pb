
op_Sqrt
in0out0"Sqrt:in0