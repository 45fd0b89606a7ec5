
op_SpatialNarrowAsGradient.
in0
in1
in2out0"SpatialNarrowAsGradient:in0:in1:in2