
op_SpatialBNGradiento
in0
in1
in2
in3out0out1out2"SpatialBNGradient*
is_test*
epsilon*	
order*
num_batches:in0:in1:in2:in3