
op_Scale
in0out0"Scale*	
scale:in0