
op_CopyOnDeviceLike"
in0
in1out0"CopyOnDeviceLike:in0:in1