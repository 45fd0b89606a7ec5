
op_ClipGradient0
in0
in1out0"ClipGradient*
min*
max:in0:in1