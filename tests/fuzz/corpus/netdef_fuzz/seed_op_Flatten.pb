

op_Flatten
in0out0"Flatten*
axis:in0