

op_Squeeze
in0out0"Squeeze*
dims:in0