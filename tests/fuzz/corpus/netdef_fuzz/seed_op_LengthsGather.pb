
op_LengthsGather$
in0
in1
in2out0"LengthsGather:in0:in1:in2