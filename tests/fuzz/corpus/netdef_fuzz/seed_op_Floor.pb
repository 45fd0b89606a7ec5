
op_Floor
in0out0"Floor:in0