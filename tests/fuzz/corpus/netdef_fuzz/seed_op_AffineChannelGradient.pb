
op_AffineChannelGradientD
in0
in1out0"AffineChannelGradient*	
order*
is_learnable:in0:in1