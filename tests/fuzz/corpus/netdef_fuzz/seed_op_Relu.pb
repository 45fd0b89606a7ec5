
op_Relu
in0out0"Relu:in0