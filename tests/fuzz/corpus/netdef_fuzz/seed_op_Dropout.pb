

op_Dropout,
in0out0"Dropout*	
ratio*
is_test:in0