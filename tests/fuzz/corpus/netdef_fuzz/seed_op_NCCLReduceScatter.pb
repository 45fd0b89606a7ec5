
op_NCCLReduceScatter
in0out0"NCCLReduceScatter:in0