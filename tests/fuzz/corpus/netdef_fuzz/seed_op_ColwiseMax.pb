
op_ColwiseMax
in0out0"
ColwiseMax:in0