
op_PRelu"
in0
in1out0"PRelu*	
order:in0:in1