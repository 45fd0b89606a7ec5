
op_While.
in0out0"While*
loop_net*
cond_net:in0