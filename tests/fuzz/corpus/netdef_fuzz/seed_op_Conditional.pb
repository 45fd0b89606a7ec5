
op_Conditional"
in0
in1
in2out0"Conditional:in0:in1:in2