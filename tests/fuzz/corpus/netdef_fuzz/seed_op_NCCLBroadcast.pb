
op_NCCLBroadcast$
in0out0"NCCLBroadcast*
root:in0