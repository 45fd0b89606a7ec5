
op_Not
in0out0"Not:in0