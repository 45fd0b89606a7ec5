
op_Sin
in0out0"Sin:in0