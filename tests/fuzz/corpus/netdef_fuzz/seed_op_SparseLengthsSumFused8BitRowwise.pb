
#op_SparseLengthsSumFused8BitRowwise7
in0
in1
in2out0" SparseLengthsSumFused8BitRowwise:in0:in1:in2