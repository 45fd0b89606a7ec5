
op_HalfToFloat
in0out0"HalfToFloat:in0