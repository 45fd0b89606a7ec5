
op_MomentumSGDD
in0
in1
in2out0out1"MomentumSGD*
momentum*
nesterov:in0:in1:in2