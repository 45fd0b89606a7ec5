
op_ConvTransposeGradient9
in0
in1
in2out0"ConvTransposeGradient*
no_bias:in0:in1:in2