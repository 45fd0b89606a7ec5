
op_CreateCommonWorldq
in0out0"CreateCommonWorld*
size*
rank*
	transport*
	interface*

timeout_ms*
status_blob:in0