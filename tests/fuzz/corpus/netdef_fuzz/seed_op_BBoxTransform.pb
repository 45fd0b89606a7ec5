
op_BBoxTransformu
in0
in1
in2out0"BBoxTransform*
weights*
apply_scale*
correct_transform_coords*
legacy_plus_one:in0:in1:in2