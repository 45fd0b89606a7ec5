// BBoxTransform (Caffe2's, Detectron's second stage): moves each RoI by its
// per-class regression deltas, clips the boxes into their image and scales
// them back to the network's input size.
//
//   rois     [M, 4] (one image) or [M, 5] (image index, x1, y1, x2, y2),
//            grouped by image in increasing order, in the scaled image
//   deltas   [M, 4 K] (dx, dy, dw, dh per class)
//   im_info  [B, 3] (height, width, scale) of each scaled image
//   box_out  [M, 4 K]; roi_batch_splits [B] (optional): RoIs per image
//
// With rotated=1 boxes are (ctr_x, ctr_y, w, h, angle in degrees): rois
// [M, 5] or [M, 6], deltas and box_out [M, 5 K]; the angle is not scaled
// (rotated_box_utils.h).
//
// Thread-safety: as any op.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

class BBoxTransformOp final : public Operator<CPUContext> {
 public:
  BBoxTransformOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Moves, clips and scales one RoI's boxes (box_dim floats at `roi`, in
  // the scaled image) by its `classes` deltas into `out`.
  void TransformRoI(const float* roi, const float* deltas, int64_t classes, float scale,
                    float height, float width, float* out) const;

  float weights_[4];
  bool rotated_;
  bool angle_bound_on_;
  int angle_bound_lo_, angle_bound_hi_;
  float clip_angle_thresh_;
  bool apply_scale_;
  bool correct_transform_coords_;
  float plus_one_;
};

}  // namespace doppio
