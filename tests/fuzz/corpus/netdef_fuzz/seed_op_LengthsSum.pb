
op_LengthsSum
in0
in1out0"
LengthsSum:in0:in1