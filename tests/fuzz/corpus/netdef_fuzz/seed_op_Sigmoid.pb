

op_Sigmoid
in0out0"Sigmoid:in0