// Detectron's FPN proposal plumbing (Caffe2's ops): CollectRpnProposals
// merges the RPN proposals of every FPN level and keeps the best
// rpn_post_nms_topN; DistributeFpnProposals sends each RoI to the level its
// size maps to (the FPN paper's eq. 1: floor(canonical_level +
// log2(sqrt(area) / canonical_scale)), clipped to the RoI levels);
// CollectAndDistributeFpnRpnProposals does both.
//
//   collect:    rpn_rois_fpn{min..max} [n_l, 5], rpn_roi_probs_fpn{..} [n_l]
//               -> rois [m, 5], best first (ties in input order)
//   distribute: rois [m, 4 or 5] -> rois_fpn{min..max} (each [k, 5], in
//               rois' order), rois_idx_restore [m] (int32: where each of
//               rois went in the levels' concatenation)
//
// Thread-safety: as any op.
#pragma once

#include "core/operator.h"

namespace doppio {

// The levels and limits of the three ops' arguments.
struct FpnLevels {
  int64_t rpn_min = 2, rpn_max = 6, roi_min = 2, roi_max = 5;
  int64_t canonical_scale = 224, canonical_level = 4;
  int64_t post_nms_top_n = 2000;
  float plus_one = 1.f;
};

class CollectRpnProposalsOp final : public Operator<CPUContext> {
 public:
  CollectRpnProposalsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  FpnLevels levels_;
};

class DistributeFpnProposalsOp final : public Operator<CPUContext> {
 public:
  DistributeFpnProposalsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  FpnLevels levels_;
};

class CollectAndDistributeFpnRpnProposalsOp final : public Operator<CPUContext> {
 public:
  CollectAndDistributeFpnRpnProposalsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  FpnLevels levels_;
};

}  // namespace doppio
