

op_Barrier%
in0out0"Barrier*
status_blob:in0