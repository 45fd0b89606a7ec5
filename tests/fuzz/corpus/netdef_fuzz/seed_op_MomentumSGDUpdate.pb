
op_MomentumSGDUpdateU
in0
in1
in2
in3out0out1out2"MomentumSGDUpdate*
momentum*
nesterov:in0:in1:in2:in3