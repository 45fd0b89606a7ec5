
op_MaxGradient"
in0
in1
in2out0"MaxGradient:in0:in1:in2