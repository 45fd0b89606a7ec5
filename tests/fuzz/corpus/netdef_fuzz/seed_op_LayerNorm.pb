
op_LayerNormQ
in0out0out1out2"	LayerNorm*
axis*
epsilon*
elementwise_affine:in0