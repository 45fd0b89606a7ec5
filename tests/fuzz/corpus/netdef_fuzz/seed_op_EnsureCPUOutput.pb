
op_EnsureCPUOutput
in0out0"EnsureCPUOutput:in0