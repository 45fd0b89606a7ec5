
op_Tanh
in0out0"Tanh:in0