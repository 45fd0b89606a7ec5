
op_Gelu 
in0out0"Gelu*
	fast_gelu:in0