
op_Slice(
in0out0"Slice*

starts*
ends:in0