// BoxWithNMSLimit (Caffe2's, Detectron's last inference step): per image
// and per foreground class, the boxes scoring above score_thresh go
// through NMS (or soft-NMS), then only the image's detections_per_im best
// (ties at the cut all stay, as in Caffe2) are kept.
//
//   scores       [N, K] (or [N, K, 1, 1]); class 0 is the background
//   boxes        [N, 4 K] (or [N, 4 K, 1, 1])
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
                                                 float* scores) const;

  float score_threshold_;
  float nms_threshold_;
  int64_t detections_per_image_;
  bool soft_nms_;
  int soft_nms_method_;  // 0 hard, 1 linear, 2 gaussian
  float soft_nms_sigma_;
  float soft_nms_min_score_;
  float plus_one_;
};

}  // namespace doppio
