
op_ChannelStats*
in0out0out1"ChannelStats*	
order:in0