
op_Tile&
in0out0"Tile*	
tiles*
axis:in0