
op_LSTMUnitGradientp
in0
in1
in2
in3out0out1out2"LSTMUnitGradient*
forget_bias*
sequence_lengths*
drop_states:in0:in1:in2:in3