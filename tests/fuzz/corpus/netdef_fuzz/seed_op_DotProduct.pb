
op_DotProduct
in0
in1out0"
DotProduct:in0:in1