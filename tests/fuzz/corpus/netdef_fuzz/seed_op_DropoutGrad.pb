
op_DropoutGrad0
in0out0"DropoutGrad*	
ratio*
is_test:in0