
op_CollectRpnProposalsb
in0
in1out0"CollectRpnProposals*
rpn_min_level*
rpn_max_level*
rpn_post_nms_topN:in0:in1