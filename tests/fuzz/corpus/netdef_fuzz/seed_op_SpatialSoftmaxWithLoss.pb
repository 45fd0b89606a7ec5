
op_SpatialSoftmaxWithLossk
in0
in1out0out1"SpatialSoftmaxWithLoss*	
scale*

label_prob*
spatial*
axis*	
order:in0:in1