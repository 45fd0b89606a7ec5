
op_AffineChannelA
in0
in1
in2out0"AffineChannel*	
order*
is_learnable:in0:in1:in2