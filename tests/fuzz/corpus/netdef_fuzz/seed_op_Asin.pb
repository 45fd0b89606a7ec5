
op_Asin
in0out0"Asin:in0