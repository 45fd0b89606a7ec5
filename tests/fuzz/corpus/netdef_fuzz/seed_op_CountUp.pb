

op_CountUp
in0out0"CountUp:in0