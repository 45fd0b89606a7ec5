
&op_CollectAndDistributeFpnRpnProposalsë
in0
in1out0out1out2"#CollectAndDistributeFpnRpnProposals*
roi_canonical_scale*
roi_canonical_level*
roi_min_level*
roi_max_level*
legacy_plus_one*
rpn_min_level*
rpn_max_level*
rpn_post_nms_topN:in0:in1