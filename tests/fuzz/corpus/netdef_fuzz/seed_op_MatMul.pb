
	op_MatMulJ
in0
in1out0"MatMul*

axis_a*

axis_b*
trans_a*
trans_b:in0:in1