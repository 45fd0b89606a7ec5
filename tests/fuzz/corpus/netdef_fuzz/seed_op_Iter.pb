
op_Iterout0"Iter