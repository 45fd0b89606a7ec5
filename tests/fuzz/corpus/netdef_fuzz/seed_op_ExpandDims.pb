
op_ExpandDims!
in0out0"
ExpandDims*
dims:in0