
op_Where
in0
in1
in2out0"Where:in0:in1:in2