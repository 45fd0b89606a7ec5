
op_Range
in0out0"Range:in0