
op_ReduceScatter0
in0
in1out0"ReduceScatter*
status_blob:in0:in1