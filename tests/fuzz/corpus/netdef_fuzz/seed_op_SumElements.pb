
op_SumElements%
in0out0"SumElements*
average:in0