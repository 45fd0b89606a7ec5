
op_UpsampleNearestGradient4
in0
in1out0"UpsampleNearestGradient*	
scale:in0:in1