
op_SwishGradient$
in0
in1
in2out0"SwishGradient:in0:in1:in2