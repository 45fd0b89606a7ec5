
op_Int8Dequantize
in0out0"Int8Dequantize:in0