
op_GenerateProposalsCPP’
in0
in1
in2
in3out0out1"GenerateProposalsCPP*
spatial_scale*
pre_nms_topN*
post_nms_topN*

nms_thresh*
min_size*
correct_transform_coords*
legacy_plus_one*
angle_bound_on*
angle_bound_lo*
angle_bound_hi*
clip_angle_thresh:in0:in1:in2:in3