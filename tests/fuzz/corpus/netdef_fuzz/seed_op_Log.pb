
op_Log
in0out0"Log:in0