
op_CheckCounterDone
in0out0"CheckCounterDone:in0