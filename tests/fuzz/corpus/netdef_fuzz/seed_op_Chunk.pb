
op_Chunk
in0out0"Chunk*
axis:in0