
op_LogSoftmax!
in0out0"
LogSoftmax*
axis:in0