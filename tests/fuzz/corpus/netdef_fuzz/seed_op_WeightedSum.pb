
op_WeightedSum
in0
in1out0"WeightedSum:in0:in1