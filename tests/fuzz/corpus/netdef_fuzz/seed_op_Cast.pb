
op_Cast>
in0out0"Cast*
to*
	from_type*
shortest_strings:in0