
op_Int8ChannelShuffleT
in0out0"Int8ChannelShuffle*
Y_scale*
Y_zero_point*	
group*	
order:in0