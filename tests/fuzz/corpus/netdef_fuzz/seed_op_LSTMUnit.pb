
op_LSTMUnitb
in0
in1
in2
in3out0out1"LSTMUnit*
forget_bias*
sequence_lengths*
drop_states:in0:in1:in2:in3