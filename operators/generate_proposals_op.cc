#include "operators/generate_proposals_op.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"
#include "operators/rotated_box_utils.h"

namespace doppio {
namespace {

void CheckShape(const OperatorBase& op, int index, const Tensor& t,
                const std::vector<int64_t>& dims, const char* layout) {
  DOPPIO_ENFORCE(t.dtype() == DataType::kFloat && t.dims() == dims, "'", op.input_name(index),
                 "' must be float32 ", dims, " (", layout, "), not ", t.DebugString());
}

}  // namespace

GenerateProposalsOp::GenerateProposalsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      pre_nms_top_n_(GetSingleArgument<int64_t>("pre_nms_topN", 6000)),
      post_nms_top_n_(GetSingleArgument<int64_t>("post_nms_topN", 300)),
      nms_threshold_(GetSingleArgument<float>("nms_thresh", 0.7f)),
      min_size_(GetSingleArgument<float>("min_size", 16.f)),
      correct_transform_coords_(GetSingleArgument<bool>("correct_transform_coords", false)),
      plus_one_(GetSingleArgument<bool>("legacy_plus_one", true) ? 1.f : 0.f),
      angle_bound_on_(GetSingleArgument<bool>("angle_bound_on", true)),
      angle_bound_lo_(GetSingleArgument<int>("angle_bound_lo", -90)),
      angle_bound_hi_(GetSingleArgument<int>("angle_bound_hi", 90)),
      clip_angle_thresh_(GetSingleArgument<float>("clip_angle_thresh", 1.f)) {
  const int period = angle_bound_hi_ - angle_bound_lo_;
  DOPPIO_ENFORCE(!angle_bound_on_ || (period > 0 && period % 180 == 0), "angle_bound_hi (",
                 angle_bound_hi_, ") - angle_bound_lo (", angle_bound_lo_,
                 ") must be a positive multiple of 180");
  const float spatial_scale = GetSingleArgument<float>("spatial_scale", 1.f / 16);
  DOPPIO_ENFORCE(std::isfinite(spatial_scale) && spatial_scale > 0, "spatial_scale (",
                 spatial_scale, ") must be a positive number");
  feat_stride_ = 1.f / spatial_scale;
}

// One image's inputs: its scores and deltas ([A, H, W] and [box_dim A, H, W]),
// the anchors, the image's size and scale.
struct GenerateProposalsOp::Image {
  const float *scores, *deltas, *anchors;
  int64_t A, H, W, box_dim;
  float height, width, scale;
};

std::vector<int64_t> GenerateProposalsOp::Candidates(const Image& im,
                                                     std::vector<float>* out) const {
  const float weights[4] = {1.f, 1.f, 1.f, 1.f};
  const float clip = boxes::DefaultDeltaClip();
  const boxes::AngleBound bound{angle_bound_on_, angle_bound_lo_, angle_bound_hi_};
  const int64_t positions = im.H * im.W, dim = im.box_dim;
  const float min_size = min_size_ * im.scale;
  out->resize(dim * positions * im.A);
  std::vector<int64_t> kept;
  // Caffe2's order: position-major, anchor-minor.
  for (int64_t p = 0; p < positions; ++p) {
    const float shift_x = static_cast<float>(p % im.W) * feat_stride_;
    const float shift_y = static_cast<float>(p / im.W) * feat_stride_;
    for (int64_t a = 0; a < im.A; ++a) {
      const int64_t i = p * im.A + a;
      const float* an = im.anchors + a * dim;
      float delta[5];
      for (int64_t k = 0; k < dim; ++k) delta[k] = im.deltas[(dim * a + k) * positions + p];
      float* q = out->data() + dim * i;
      bool inside = false;
      if (dim == 4) {
        const boxes::Box box{an[0] + shift_x, an[1] + shift_y, an[2] + shift_x, an[3] + shift_y};
        const boxes::Box moved = boxes::ClipToImage(
            boxes::ApplyDeltas(box, delta, weights, clip, correct_transform_coords_, plus_one_),
            im.height, im.width, plus_one_);
        const float w = moved.x2 - moved.x1 + plus_one_, h = moved.y2 - moved.y1 + plus_one_;
        inside = w >= min_size && h >= min_size && moved.x1 + w / 2 < im.width &&
                 moved.y1 + h / 2 < im.height;
        q[0] = moved.x1, q[1] = moved.y1, q[2] = moved.x2, q[3] = moved.y2;
      } else {
        // A rotated anchor moves by its center only.
        const boxes::RotatedBox box{an[0] + shift_x, an[1] + shift_y, an[2], an[3], an[4]};
        const boxes::RotatedBox moved =
            boxes::ClipRotatedToImage(boxes::ApplyRotatedDeltas(box, delta, weights, clip, bound),
                                      im.height, im.width, clip_angle_thresh_, plus_one_);
        inside = moved.w >= min_size && moved.h >= min_size && moved.cx < im.width &&
                 moved.cy < im.height;
        q[0] = moved.cx, q[1] = moved.cy, q[2] = moved.w, q[3] = moved.h, q[4] = moved.angle;
      }
      if (inside) kept.push_back(i);
    }
  }
  return kept;
}

void GenerateProposalsOp::RunOnDevice() {
  const Tensor& scores = Input(0);
  const Tensor& deltas = Input(1);
  const Tensor& im_info = Input(2);
  const Tensor& anchors = Input(3);
  DOPPIO_ENFORCE(scores.ndim() == 4 && scores.dtype() == DataType::kFloat, "scores '",
                 input_name(0), "' must be float32 [N, A, H, W], not ", scores.DebugString());
  const int64_t N = scores.dim(0), A = scores.dim(1), H = scores.dim(2), W = scores.dim(3);
  const int64_t dim = anchors.ndim() == 2 && anchors.dim(1) == 5 ? 5 : 4;
  CheckShape(*this, 3, anchors, {A, dim},
             "x1, y1, x2, y2 per anchor, or ctr_x, ctr_y, w, h, angle for rotated boxes");
  CheckShape(*this, 1, deltas, {N, dim * A, H, W}, dim == 4 ? "N, 4 A, H, W" : "N, 5 A, H, W");
  CheckShape(*this, 2, im_info, {N, 3}, "height, width, scale per image");
  const float* info = im_info.data<float>();
  const int64_t count = H * W * A;
  std::vector<float> rois, probs;
  for (int64_t n = 0; n < N; ++n) {
    const Image im{scores.data<float>() + n * count,
                   deltas.data<float>() + n * dim * count,
                   anchors.data<float>(),
                   A,
                   H,
                   W,
                   dim,
                   info[n * 3],
                   info[n * 3 + 1],
                   info[n * 3 + 2]};
    DOPPIO_ENFORCE(std::isfinite(im.height) && std::isfinite(im.width) && std::isfinite(im.scale) &&
                       im.scale > 0,
                   "im_info row ", n, " (", im.height, ", ", im.width, ", ", im.scale,
                   ") must be finite with a positive scale");
    std::vector<float> boxes_of_image;
    const std::vector<int64_t> kept = Candidates(im, &boxes_of_image);
    // Scores in Caffe2's candidate order (position-major, anchor-minor).
    std::vector<float> candidate_scores(count);
    for (int64_t i = 0; i < count; ++i) {
      candidate_scores[i] = im.scores[(i % A) * H * W + i / A];
    }
    std::vector<int64_t> order = boxes::ByDescendingScore(candidate_scores.data(), kept);
    if (pre_nms_top_n_ > 0 && pre_nms_top_n_ < static_cast<int64_t>(order.size())) {
      order.resize(pre_nms_top_n_);
    }
    const std::vector<int64_t> keep =
        boxes::Nms(boxes_of_image.data(), dim, order, nms_threshold_,
                   post_nms_top_n_ > 0 ? post_nms_top_n_ : -1, plus_one_, dim == 5);
    for (int64_t i : keep) {
      rois.push_back(static_cast<float>(n));
      rois.insert(rois.end(), boxes_of_image.begin() + dim * i,
                  boxes_of_image.begin() + dim * (i + 1));
      probs.push_back(candidate_scores[i]);
    }
  }
  const int64_t total = static_cast<int64_t>(probs.size());
  Tensor* out_rois = Output(0);
  out_rois->Resize({total, 1 + dim});
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
      .Arg("angle_bound_on",
           "(bool, default true) rotated boxes: fold moved angles into "
           "[angle_bound_lo, angle_bound_hi]")
      .Arg("angle_bound_lo", "(int, default -90) rotated boxes: the fold's low end (degrees)")
      .Arg("angle_bound_hi",
           "(int, default 90) rotated boxes: the fold's high end; hi - lo "
           "must be a multiple of 180")
      .Arg("clip_angle_thresh",
           "(float, default 1) rotated boxes within this many degrees of "
           "upright are clipped into the image; others are not")
      .Input(0, "scores", "[N, A, H, W] objectness")
      .Input(1, "bbox_deltas",
             "[N, 4 A, H, W] dx, dy, dw, dh per anchor ([N, 5 A, H, W] with "
             "da, in radians, for rotated anchors)")
      .Input(2, "im_info", "[N, 3] height, width, scale")
      .Input(3, "anchors",
             "[A, 4] anchors at position (0, 0), or [A, 5] rotated anchors "
             "(ctr_x, ctr_y, w, h, angle in degrees counter-clockwise)")
      .Output(0, "rois",
              "[n, 5] image index, x1, y1, x2, y2 ([n, 6] image index, ctr_x, "
              "ctr_y, w, h, angle for rotated anchors); per image best first")
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
