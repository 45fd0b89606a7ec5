
op_SequenceMaskr
in0out0"SequenceMask*
mode*
axis*	
batch*

radius*
fill_val*
grad*
repeat_from_axis:in0