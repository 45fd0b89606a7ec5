
op_ReversePackedSegs#
in0
in1out0"ReversePackedSegs:in0:in1