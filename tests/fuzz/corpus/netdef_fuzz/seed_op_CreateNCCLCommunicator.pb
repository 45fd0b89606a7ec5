
op_CreateNCCLCommunicatorQ
in0out0"CreateNCCLCommunicator*
size*
rank*
name*

timeout_ms:in0