
op_HasScope
in0out0"HasScope:in0