
	op_ArgMinB
in0out0"ArgMin*
axis*
keepdims*
select_last_index:in0