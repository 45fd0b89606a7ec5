
op_BoxWithNMSLimitÑ
in0
in1out0out1out2"BoxWithNMSLimit*
score_thresh*
nms*
detections_per_im*
soft_nms_enabled*
soft_nms_method*
soft_nms_sigma*
soft_nms_min_score_thres*
legacy_plus_one:in0:in1