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
  float weights_[4];
  bool apply_scale_;
  bool correct_transform_coords_;
  float plus_one_;
};

}  // namespace doppio
