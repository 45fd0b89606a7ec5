
op_NCCLReduce!
in0out0"
NCCLReduce*
root:in0