
op_Sinh
in0out0"Sinh:in0