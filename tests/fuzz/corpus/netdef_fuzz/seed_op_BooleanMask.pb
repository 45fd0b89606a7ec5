
op_BooleanMask
in0
in1out0"BooleanMask:in0:in1