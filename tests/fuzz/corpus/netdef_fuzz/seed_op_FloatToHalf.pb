
op_FloatToHalf"
in0out0"FloatToHalf*
clip:in0