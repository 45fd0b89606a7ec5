
op_LengthsMean
in0
in1out0"LengthsMean:in0:in1