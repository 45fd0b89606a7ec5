
op_Free
in0out0"Free:in0