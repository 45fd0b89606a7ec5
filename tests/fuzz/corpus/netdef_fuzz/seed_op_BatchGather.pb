
op_BatchGather
in0
in1out0"BatchGather:in0:in1