

op_GRUUnitV
in0
in1
in2out0"GRUUnit*
sequence_lengths*
drop_states*
forget_bias:in0:in1:in2