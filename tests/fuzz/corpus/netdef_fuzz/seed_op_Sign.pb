
op_Sign
in0out0"Sign:in0