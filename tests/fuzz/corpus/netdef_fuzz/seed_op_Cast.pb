
op_Cast(
in0out0"Cast*
to*
	from_type:in0