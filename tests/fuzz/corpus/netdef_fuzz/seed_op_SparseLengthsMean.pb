
op_SparseLengthsMean(
in0
in1
in2out0"SparseLengthsMean:in0:in1:in2