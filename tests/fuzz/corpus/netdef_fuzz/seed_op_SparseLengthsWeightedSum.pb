
op_SparseLengthsWeightedSumI
in0
in1
in2
in3out0"SparseLengthsWeightedSum*
grad_on_weights:in0:in1:in2:in3