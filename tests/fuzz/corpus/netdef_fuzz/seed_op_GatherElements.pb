
op_GatherElements*
in0
in1out0"GatherElements*
axis:in0:in1