
op_LengthsRangeFill
in0out0"LengthsRangeFill:in0