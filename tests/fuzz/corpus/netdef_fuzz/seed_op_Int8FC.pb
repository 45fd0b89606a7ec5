
	op_Int8FC<
in0
in1
in2out0"Int8FC*
Y_scale*
Y_zero_point:in0:in1:in2