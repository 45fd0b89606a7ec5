
op_BatchMatMulF
in0
in1out0"BatchMatMul*
trans_a*
trans_b*
	broadcast:in0:in1