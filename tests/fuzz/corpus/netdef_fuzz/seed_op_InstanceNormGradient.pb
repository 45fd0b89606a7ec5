
op_InstanceNormGradientT
in0
in1
in2
in3out0out1out2"InstanceNormGradient*
epsilon*	
order:in0:in1:in2:in3