
op_AtomicIter
in0
in1out0"
AtomicIter:in0:in1