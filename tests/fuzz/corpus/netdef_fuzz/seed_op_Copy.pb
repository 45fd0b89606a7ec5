
op_Copy
in0out0"Copy:in0