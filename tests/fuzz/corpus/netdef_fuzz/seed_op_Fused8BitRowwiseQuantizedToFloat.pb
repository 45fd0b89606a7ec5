
#op_Fused8BitRowwiseQuantizedToFloat-
in0out0" Fused8BitRowwiseQuantizedToFloat:in0