
op_AllreduceG
in0out0"	Allreduce*
num_threads*
	algorithm*
status_blob:in0