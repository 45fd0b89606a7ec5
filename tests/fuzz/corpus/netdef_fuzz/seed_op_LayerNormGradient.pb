
op_LayerNormGradient7
in0
in1
in2
in3out0"LayerNormGradient*
axis:in0:in1:in2:in3