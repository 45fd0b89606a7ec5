
op_If+
in0out0"If*
then_net*
else_net:in0