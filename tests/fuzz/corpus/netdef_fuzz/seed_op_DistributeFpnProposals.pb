
op_DistributeFpnProposals–
in0out0out1"DistributeFpnProposals*
roi_canonical_scale*
roi_canonical_level*
roi_min_level*
roi_max_level*
legacy_plus_one:in0