

op_AdagradA
in0
in1
in2
in3out0out1"Adagrad*
epsilon*	
decay:in0:in1:in2:in3