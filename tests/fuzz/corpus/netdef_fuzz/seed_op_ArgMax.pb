
	op_ArgMaxB
in0out0"ArgMax*
axis*
keepdims*
select_last_index:in0