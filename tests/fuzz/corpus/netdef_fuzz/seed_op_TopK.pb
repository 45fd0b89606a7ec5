
op_TopK(
in0out0out1"TopK*
k*
axis:in0