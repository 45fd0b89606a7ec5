
op_RecurrentNetworkGradient/
in0
in1
in2out0"RecurrentNetworkGradient:in0:in1:in2