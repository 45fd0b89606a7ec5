
op_CreateCounter%out0"CreateCounter*

init_count