
op_SumReduceLikeB
in0
in1out0"SumReduceLike*
axis*
axis_str*	
order:in0:in1