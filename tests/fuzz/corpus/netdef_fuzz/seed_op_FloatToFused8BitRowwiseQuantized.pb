
#op_FloatToFused8BitRowwiseQuantized-
in0out0" FloatToFused8BitRowwiseQuantized:in0