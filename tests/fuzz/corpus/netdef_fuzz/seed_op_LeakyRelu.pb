
op_LeakyRelu!
in0out0"	LeakyRelu*	
alpha:in0