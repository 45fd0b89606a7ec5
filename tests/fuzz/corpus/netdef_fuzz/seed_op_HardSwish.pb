
op_HardSwish
in0out0"	HardSwish:in0