
op_ScatterWeightedSum)
in0
in1
in2out0"ScatterWeightedSum:in0:in1:in2