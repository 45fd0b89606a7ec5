
op_Max
in0out0"Max:in0