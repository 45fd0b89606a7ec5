
op_DestroyCommonWorld
in0out0"DestroyCommonWorld:in0