
op_SoftmaxWithLossd
in0
in1out0out1"SoftmaxWithLoss*	
scale*

label_prob*
spatial*
axis*	
order:in0:in1