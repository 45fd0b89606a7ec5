
!op_SpatialSoftmaxWithLossGradientw
in0
in1
in2
in3out0"SpatialSoftmaxWithLossGradient*	
scale*

label_prob*
spatial*
axis*	
order:in0:in1:in2:in3