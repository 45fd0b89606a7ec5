
op_rnn_internal_apply_linkG
in0
in1out0out1"rnn_internal_apply_link*

offset*

window:in0:in1