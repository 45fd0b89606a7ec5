// GenerateProposals (and its alias GenerateProposalsCPP; Caffe2's, Faster
// R-CNN's region proposal step): every anchor at every feature-map position
// is moved by its regression deltas, clipped into the image, filtered by
// size, and the best-scoring pre_nms_topN go through NMS, of which the best
// post_nms_topN remain.
//
//   scores      [N, A, H, W]
//   bbox_deltas [N, 4 A, H, W]
//   im_info     [N, 3] (height, width, scale)
//   anchors     [A, 4]
//   -> rois [n, 5] (image index, x1, y1, x2, y2), rois_probs [n]
//
// Rotated proposals (RRPN): anchors [A, 5] (ctr_x, ctr_y, w, h, angle in
// degrees), deltas [N, 5 A, H, W], rois [n, 6]; see rotated_box_utils.h.
//
// Thread-safety: as any op.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace doppio {

class GenerateProposalsOp final : public Operator<CPUContext> {
 public:
  GenerateProposalsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  struct Image;
  // One image's candidates (transformed, clipped, size-filtered), as
  // `box_dim` floats per box in `boxes`; returns those that pass the filter.
  std::vector<int64_t> Candidates(const Image& image, std::vector<float>* boxes) const;

  float feat_stride_;  // 1 / spatial_scale
  int64_t pre_nms_top_n_, post_nms_top_n_;
  float nms_threshold_, min_size_;
  bool correct_transform_coords_;
  float plus_one_;
  bool angle_bound_on_;
  int angle_bound_lo_, angle_bound_hi_;
  float clip_angle_thresh_;
};

}  // namespace doppio
