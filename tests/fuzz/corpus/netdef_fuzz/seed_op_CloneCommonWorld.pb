
op_CloneCommonWorld
in0out0"CloneCommonWorld:in0