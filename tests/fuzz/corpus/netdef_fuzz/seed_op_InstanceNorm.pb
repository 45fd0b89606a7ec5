
op_InstanceNorm;
in0
in1
in2out0"InstanceNorm*
epsilon*	
order:in0:in1:in2