
op_UpsampleNearest'
in0out0"UpsampleNearest*	
scale:in0