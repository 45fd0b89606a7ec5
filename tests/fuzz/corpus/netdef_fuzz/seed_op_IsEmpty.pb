

op_IsEmpty
in0out0"IsEmpty:in0