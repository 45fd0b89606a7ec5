
op_HardSwishGradient#
in0
in1out0"HardSwishGradient:in0:in1