
op_HasElements
in0out0"HasElements:in0