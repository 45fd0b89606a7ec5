
op_Elu
in0out0"Elu*	
alpha:in0