
op_NanCheck
in0out0"NanCheck:in0