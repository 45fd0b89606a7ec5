
op_LpNormGradient4
in0
in1out0"LpNormGradient*
p*
average:in0:in1