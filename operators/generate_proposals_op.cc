#include "operators/generate_proposals_op.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"

namespace doppio {
namespace {

void CheckShape(const OperatorBase& op, int index, const Tensor& t,
                const std::vector<int64_t>& dims, const char* layout) {
  DOPPIO_ENFORCE(t.dtype() == DataType::kFloat && t.dims() == dims, "'", op.input_name(index),
                 "' must be float32 ", dims, " (", layout, "), not ", t.DebugString());
}

// One image's proposals, best first: its candidates in Caffe2's order
// (position-major, anchor-minor) after the transform, clip and size filter.
struct Candidates {
  std::vector<float> boxes;  // 4 per candidate
  std::vector<float> scores;
  std::vector<int64_t> kept;  // those passing the size filter
};

}  // namespace

GenerateProposalsOp::GenerateProposalsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      pre_nms_top_n_(GetSingleArgument<int64_t>("pre_nms_topN", 6000)),
      post_nms_top_n_(GetSingleArgument<int64_t>("post_nms_topN", 300)),
      nms_threshold_(GetSingleArgument<float>("nms_thresh", 0.7f)),
      min_size_(GetSingleArgument<float>("min_size", 16.f)),
      correct_transform_coords_(GetSingleArgument<bool>("correct_transform_coords", false)),
      plus_one_(GetSingleArgument<bool>("legacy_plus_one", true) ? 1.f : 0.f) {
  const float spatial_scale = GetSingleArgument<float>("spatial_scale", 1.f / 16);
  DOPPIO_ENFORCE(std::isfinite(spatial_scale) && spatial_scale > 0, "spatial_scale (",
                 spatial_scale, ") must be a positive number");
  feat_stride_ = 1.f / spatial_scale;
}

void GenerateProposalsOp::RunOnDevice() {
  const Tensor& scores = Input(0);
  const Tensor& deltas = Input(1);
  const Tensor& im_info = Input(2);
  const Tensor& anchors = Input(3);
  DOPPIO_ENFORCE(scores.ndim() == 4 && scores.dtype() == DataType::kFloat, "scores '",
                 input_name(0), "' must be float32 [N, A, H, W], not ", scores.DebugString());
  const int64_t N = scores.dim(0), A = scores.dim(1), H = scores.dim(2), W = scores.dim(3);
  CheckShape(*this, 1, deltas, {N, 4 * A, H, W}, "N, 4 A, H, W");
  CheckShape(*this, 2, im_info, {N, 3}, "height, width, scale per image");
  CheckShape(*this, 3, anchors, {A, 4}, "x1, y1, x2, y2 per anchor");
  const float* info = im_info.data<float>();
  const float* anchor = anchors.data<float>();
  const float weights[4] = {1.f, 1.f, 1.f, 1.f};
  const float clip = boxes::DefaultDeltaClip();
  const int64_t positions = H * W, count = positions * A;
  std::vector<float> rois, probs;
  for (int64_t n = 0; n < N; ++n) {
    const float height = info[n * 3], width = info[n * 3 + 1], scale = info[n * 3 + 2];
    DOPPIO_ENFORCE(
        std::isfinite(height) && std::isfinite(width) && std::isfinite(scale) && scale > 0,
        "im_info row ", n, " (", height, ", ", width, ", ", scale,
        ") must be finite with a positive scale");
    const float* s = scores.data<float>() + n * count;
    const float* d = deltas.data<float>() + n * 4 * count;
    Candidates c;
    c.boxes.resize(4 * count);
    c.scores.resize(count);
    const float min_size = min_size_ * scale;
    for (int64_t p = 0; p < positions; ++p) {
      const float shift_x = static_cast<float>(p % W) * feat_stride_;
      const float shift_y = static_cast<float>(p / W) * feat_stride_;
      for (int64_t a = 0; a < A; ++a) {
        const int64_t i = p * A + a;
        const float* an = anchor + a * 4;
        const boxes::Box box{an[0] + shift_x, an[1] + shift_y, an[2] + shift_x, an[3] + shift_y};
        const float delta[4] = {d[(4 * a) * positions + p], d[(4 * a + 1) * positions + p],
                                d[(4 * a + 2) * positions + p], d[(4 * a + 3) * positions + p]};
        const boxes::Box moved = boxes::ClipToImage(
            boxes::ApplyDeltas(box, delta, weights, clip, correct_transform_coords_, plus_one_),
            height, width, plus_one_);
        c.boxes[4 * i] = moved.x1;
        c.boxes[4 * i + 1] = moved.y1;
        c.boxes[4 * i + 2] = moved.x2;
        c.boxes[4 * i + 3] = moved.y2;
        c.scores[i] = s[a * positions + p];
        const float w = moved.x2 - moved.x1 + plus_one_, h = moved.y2 - moved.y1 + plus_one_;
        const bool big = w >= min_size && h >= min_size;
        if (big && moved.x1 + w / 2 < width && moved.y1 + h / 2 < height) c.kept.push_back(i);
      }
    }
    std::vector<int64_t> order = boxes::ByDescendingScore(c.scores.data(), c.kept);
    if (pre_nms_top_n_ > 0 && pre_nms_top_n_ < static_cast<int64_t>(order.size())) {
      order.resize(pre_nms_top_n_);
    }
    const std::vector<int64_t> keep =
        boxes::Nms(c.boxes.data(), 4, order, nms_threshold_,
                   post_nms_top_n_ > 0 ? post_nms_top_n_ : -1, plus_one_);
    for (int64_t i : keep) {
      rois.insert(rois.end(), {static_cast<float>(n), c.boxes[4 * i], c.boxes[4 * i + 1],
                               c.boxes[4 * i + 2], c.boxes[4 * i + 3]});
      probs.push_back(c.scores[i]);
    }
  }
  const int64_t total = static_cast<int64_t>(probs.size());
  Tensor* out_rois = Output(0);
  out_rois->Resize({total, 5});
  std::copy(rois.begin(), rois.end(), out_rois->mutable_data<float>());
  Tensor* out_probs = Output(1);
  out_probs->Resize({total});
  std::copy(probs.begin(), probs.end(), out_probs->mutable_data<float>());
}

REGISTER_CPU_OPERATOR(GenerateProposals, GenerateProposalsOp);
REGISTER_CPU_OPERATOR(GenerateProposalsCPP, GenerateProposalsOp);

namespace {

void GenerateProposalsSchema(OpSchema& schema) {
  schema.NumInputs(4)
      .NumOutputs(2)
      .Arg("spatial_scale", "(float, default 1/16) the feature map's scale: stride 1 / it")
      .Arg("pre_nms_topN", "(int, default 6000) best candidates into NMS; <= 0: all")
      .Arg("post_nms_topN", "(int, default 300) proposals kept after NMS; <= 0: all")
      .Arg("nms_thresh", "(float, default 0.7) NMS IoU threshold")
      .Arg("min_size", "(float, default 16) least width and height, times im_info's scale")
      .Arg("correct_transform_coords",
           "(bool, default false) Detectron's box transform: the far corner minus one pixel")
      .Arg("legacy_plus_one", "(bool, default true) widths and heights are x2 - x1 + 1")
      .Input(0, "scores", "[N, A, H, W] objectness")
      .Input(1, "bbox_deltas", "[N, 4 A, H, W] dx, dy, dw, dh per anchor")
      .Input(2, "im_info", "[N, 3] height, width, scale")
      .Input(3, "anchors", "[A, 4] anchors at position (0, 0)")
      .Output(0, "rois", "[n, 5] image index, x1, y1, x2, y2; per image best first")
      .Output(1, "rois_probs", "[n] their scores")
      .Doc(
          "Faster R-CNN's region proposals: anchors moved by their deltas, clipped, filtered "
          "by size, top pre_nms_topN by score through NMS, top post_nms_topN kept. Equal "
          "scores keep their position order; NaN scores sort last.");
}

}  // namespace

OPERATOR_SCHEMA(GenerateProposals).Apply(GenerateProposalsSchema);
OPERATOR_SCHEMA(GenerateProposalsCPP).Apply(GenerateProposalsSchema);

SHOULD_NOT_DO_GRADIENT(GenerateProposals, "a selection of boxes (as in Caffe2)");
SHOULD_NOT_DO_GRADIENT(GenerateProposalsCPP, "a selection of boxes (as in Caffe2)");

}  // namespace doppio
