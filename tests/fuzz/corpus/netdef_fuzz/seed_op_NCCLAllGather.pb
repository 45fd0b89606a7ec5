
op_NCCLAllGather
in0out0"NCCLAllGather:in0