
op_BatchGatherGradient*
in0
in1
in2out0"BatchGatherGradient:in0:in1:in2