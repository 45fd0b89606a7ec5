
op_Accuracy%
in0
in1out0"Accuracy*	
top_k:in0:in1