
op_Asinh
in0out0"Asinh:in0