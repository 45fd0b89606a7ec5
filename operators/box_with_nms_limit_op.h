// BoxWithNMSLimit (Caffe2's, Detectron's last inference step): per image
// and per foreground class, the boxes scoring above score_thresh go
// through NMS (or soft-NMS), then only the image's detections_per_im best
// are kept.
//
//   scores       [N, K] (or [N, K, 1, 1]); class 0 is the background
//   boxes        [N, 4 K] (or [N, 4 K, 1, 1])
//
// Caffe2's later arguments: rotated (5-float boxes, rotated_box_utils.h),
// cls_agnostic_bbox_reg (one box for every class: [N, 4]),
// input_boxes_include_bg_cls = 0 (boxes of the K - 1 foreground classes
// only, and scores with the background last), output_classes_include_bg_cls
// = 0 (classes numbered from 0 for the first foreground class).
//   batch_splits [B] (optional, float): boxes per image, in order
//   -> scores [n], boxes [n, 4], classes [n] (float), batch_splits [B],
//      keeps [n] (int32: each kept box's row within its image),
//      keeps_size [B, K] (int32: kept per image and class)
//
// Thread-safety: as any op.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

class BoxWithNMSLimitOp final : public Operator<CPUContext> {
 public:
  BoxWithNMSLimitOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::vector<std::vector<int64_t>> KeepsOfImage(int64_t n, int64_t K, const float* boxes,
                                                 int64_t box_cols, float* scores) const;
  // Class j's (1 <= j < K, 0 the background) column of scores, and box.
  int64_t ScoreColumn(int64_t j) const { return j - 1 + (include_bg_ ? 1 : 0); }
  int64_t BoxColumn(int64_t j) const { return cls_agnostic_ ? 0 : (include_bg_ ? j : j - 1); }

  float score_threshold_;
  float nms_threshold_;
  int64_t detections_per_image_;
  bool soft_nms_;
  int soft_nms_method_;  // 0 hard, 1 linear, 2 gaussian
  float soft_nms_sigma_;
  float soft_nms_min_score_;
  float plus_one_;
  int64_t box_dim_;  // 4, or 5 for rotated boxes
  bool cls_agnostic_, include_bg_, output_include_bg_;
};

}  // namespace doppio
