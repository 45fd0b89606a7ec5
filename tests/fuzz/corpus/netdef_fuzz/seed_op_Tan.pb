
op_Tan
in0out0"Tan:in0