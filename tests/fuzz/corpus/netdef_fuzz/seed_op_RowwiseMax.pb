
op_RowwiseMax
in0out0"
RowwiseMax:in0