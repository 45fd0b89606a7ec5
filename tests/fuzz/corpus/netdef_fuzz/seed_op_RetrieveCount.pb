
op_RetrieveCount
in0out0"RetrieveCount:in0