
op_SquaredL2Distance#
in0
in1out0"SquaredL2Distance:in0:in1