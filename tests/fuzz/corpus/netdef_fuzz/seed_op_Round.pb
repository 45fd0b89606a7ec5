
op_Round
in0out0"Round:in0