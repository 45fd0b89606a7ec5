
op_Conv1DGradient>
in0
in1
in2out0"Conv1DGradient*
no_bias*

kernel:in0:in1:in2