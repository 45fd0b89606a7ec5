
op_CopyFromCPUInput
in0out0"CopyFromCPUInput:in0