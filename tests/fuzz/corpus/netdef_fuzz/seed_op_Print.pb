
op_Print7
in0out0"Print*
to_file*	
limit*
every_n:in0