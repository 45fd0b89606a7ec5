
op_SpatialBNi
in0
in1
in2
in3out0"	SpatialBN*
is_test*
epsilon*	
order*
num_batches*
momentum:in0:in1:in2:in3