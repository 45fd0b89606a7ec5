
op_Alias
in0out0"Alias:in0