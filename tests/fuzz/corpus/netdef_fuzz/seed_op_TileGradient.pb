
op_TileGradient
in0out0"TileGradient:in0