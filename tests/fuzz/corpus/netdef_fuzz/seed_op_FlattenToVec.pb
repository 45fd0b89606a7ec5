
op_FlattenToVec
in0out0"FlattenToVec:in0