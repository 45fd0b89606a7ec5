
op_Softplus
in0out0"Softplus:in0