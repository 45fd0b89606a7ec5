

op_RmsPropU
in0
in1
in2
in3out0out1out2"RmsProp*	
decay*
momentum*
epsilon:in0:in1:in2:in3