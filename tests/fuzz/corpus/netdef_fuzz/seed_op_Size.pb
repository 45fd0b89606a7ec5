
op_Size
in0out0"Size:in0