
op_RecurrentNetworkÅ
in0out0out1"RecurrentNetwork*
step_net*
backward_step_net*
timestep*
recurrent_states*
initial_recurrent_state_ids*
link_internal*
link_external*
link_offset*
link_window*
	alias_src*
	alias_dst*
alias_offset*	
param*
param_grads*
outputs_with_grads*
backward_link_internal*
backward_link_external*
backward_link_offset*
recompute_blobs_on_backward*
enable_rnn_executor:in0