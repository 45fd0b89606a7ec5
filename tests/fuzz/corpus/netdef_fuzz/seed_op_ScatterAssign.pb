
op_ScatterAssign$
in0
in1
in2out0"ScatterAssign:in0:in1:in2