
$op_SparseLengthsMeanFused8BitRowwise8
in0
in1
in2out0"!SparseLengthsMeanFused8BitRowwise:in0:in1:in2