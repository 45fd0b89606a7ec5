
op_Sum
in0out0"Sum:in0