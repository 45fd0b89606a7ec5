
)op_rnn_internal_accumulate_gradient_inputI
in0
in1
in2out0"&rnn_internal_accumulate_gradient_input*

offset:in0:in1:in2