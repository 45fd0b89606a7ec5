

op_Softmax
in0out0"Softmax*
axis:in0