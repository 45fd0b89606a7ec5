
op_Clip#
in0out0"Clip*
min*
max:in0