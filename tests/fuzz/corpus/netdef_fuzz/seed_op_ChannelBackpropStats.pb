
op_ChannelBackpropStatsA
in0
in1
in2
in3out0out1"ChannelBackpropStats*	
order:in0:in1:in2:in3