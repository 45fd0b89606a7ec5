
op_Shape
in0out0"Shape*
axes:in0