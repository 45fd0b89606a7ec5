
op_SliceGradient5
in0
in1out0"SliceGradient*

starts*
ends:in0:in1