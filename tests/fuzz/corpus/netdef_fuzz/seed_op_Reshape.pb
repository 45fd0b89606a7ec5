

op_Reshape%
in0out0out1"Reshape*	
shape:in0