
op_SparseLengthsSum'
in0
in1
in2out0"SparseLengthsSum:in0:in1:in2