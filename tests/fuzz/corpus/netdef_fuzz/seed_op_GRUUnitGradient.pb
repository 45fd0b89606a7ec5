
op_GRUUnitGradientX
in0
in1
in2
in3out0out1"GRUUnitGradient*
sequence_lengths*
drop_states:in0:in1:in2:in3