
op_LengthsToShape
in0out0"LengthsToShape:in0