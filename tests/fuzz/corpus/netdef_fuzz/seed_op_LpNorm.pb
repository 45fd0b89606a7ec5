
	op_LpNorm'
in0out0"LpNorm*
p*
average:in0