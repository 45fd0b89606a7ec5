
op_SoftmaxWithLossGradientp
in0
in1
in2
in3out0"SoftmaxWithLossGradient*	
scale*

label_prob*
spatial*
axis*	
order:in0:in1:in2:in3