
op_CountDown
in0out0"	CountDown:in0