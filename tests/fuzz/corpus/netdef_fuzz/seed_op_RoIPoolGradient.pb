
op_RoIPoolGradientR
in0
in1
in2
in3out0"RoIPoolGradient*
pooled_h*
pooled_w*	
order:in0:in1:in2:in3