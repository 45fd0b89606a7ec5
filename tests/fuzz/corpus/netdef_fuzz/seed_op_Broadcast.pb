
op_Broadcast1
in0out0"	Broadcast*
root*
status_blob:in0