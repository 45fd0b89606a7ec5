
op_Transpose 
in0out0"	Transpose*
axes:in0