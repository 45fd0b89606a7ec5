
op_Split@
in0out0"Split*
axis*	
order*	
split*
add_axis:in0