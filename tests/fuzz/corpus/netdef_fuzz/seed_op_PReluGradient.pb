
op_PReluGradient:
in0
in1
in2
in3out0out1"PReluGradient*	
order:in0:in1:in2:in3