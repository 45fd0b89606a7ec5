
op_ResizeLike
in0
in1out0"
ResizeLike:in0:in1