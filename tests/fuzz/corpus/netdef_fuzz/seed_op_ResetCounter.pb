
op_ResetCounter)
in0out0"ResetCounter*

init_count:in0