
op_Allgather,
in0
in1out0"	Allgather*
status_blob:in0:in1