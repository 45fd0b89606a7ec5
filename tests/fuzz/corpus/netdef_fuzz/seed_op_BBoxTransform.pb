
op_BBoxTransformÕ
in0
in1
in2out0"BBoxTransform*
weights*
apply_scale*
correct_transform_coords*
legacy_plus_one*
rotated*
angle_bound_on*
angle_bound_lo*
angle_bound_hi*
clip_angle_thresh:in0:in1:in2