
op_NCCLAllreduce
in0out0"NCCLAllreduce:in0