
op_SpatialNarrowAs!
in0
in1out0"SpatialNarrowAs:in0:in1