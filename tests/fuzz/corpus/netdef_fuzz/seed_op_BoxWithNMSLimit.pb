
op_BoxWithNMSLimit¼
in0
in1out0out1out2"BoxWithNMSLimit*
score_thresh*
nms*
detections_per_im*
soft_nms_enabled*
soft_nms_method*
soft_nms_sigma*
soft_nms_min_score_thres*
legacy_plus_one*
rotated*
cls_agnostic_bbox_reg*
input_boxes_include_bg_cls*!
output_classes_include_bg_cls:in0:in1