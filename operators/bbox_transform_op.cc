#include "operators/bbox_transform_op.h"

#include <cmath>
#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"
#include "operators/rotated_box_utils.h"

namespace doppio {
namespace {

void CheckFloat(const OperatorBase& op, int index, const Tensor& t) {
  DOPPIO_ENFORCE(t.dtype() == DataType::kFloat, "'", op.input_name(index),
                 "' must be float32, not ", t.DebugString());
}

// How many RoIs each image has; the rows must run through the images in
// increasing order (as GenerateProposals writes them).
std::vector<int64_t> RoIsPerImage(const OperatorBase& op, const Tensor& rois, int64_t box_dim,
                                  int64_t images) {
  const int64_t M = rois.dim(0), cols = rois.dim(1);
  std::vector<int64_t> counts(images, 0);
  if (cols == box_dim) {
    DOPPIO_ENFORCE(images == 1, "RoIs '", op.input_name(0), "' of ", box_dim,
                   " columns belong to one image, but im_info has ", images);
    counts[0] = M;
    return counts;
  }
  const float* r = rois.data<float>();
  int64_t last = 0;
  for (int64_t i = 0; i < M; ++i) {
    const int64_t image = boxes::ImageIndex(r[i * cols], i, images, "im_info");
    DOPPIO_ENFORCE(image >= last, "RoI ", i, " of image ", image, " follows one of image ", last,
                   ": RoIs must be grouped by image in increasing order");
    last = image;
    ++counts[image];
  }
  return counts;
}

}  // namespace

BBoxTransformOp::BBoxTransformOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      rotated_(GetSingleArgument<bool>("rotated", false)),
      angle_bound_on_(GetSingleArgument<bool>("angle_bound_on", true)),
      angle_bound_lo_(GetSingleArgument<int>("angle_bound_lo", -90)),
      angle_bound_hi_(GetSingleArgument<int>("angle_bound_hi", 90)),
      clip_angle_thresh_(GetSingleArgument<float>("clip_angle_thresh", 1.f)),
      apply_scale_(GetSingleArgument<bool>("apply_scale", true)),
      correct_transform_coords_(GetSingleArgument<bool>("correct_transform_coords", false)),
      plus_one_(GetSingleArgument<bool>("legacy_plus_one", true) ? 1.f : 0.f) {
  const int period = angle_bound_hi_ - angle_bound_lo_;
  DOPPIO_ENFORCE(!rotated_ || !angle_bound_on_ || (period > 0 && period % 180 == 0),
                 "angle_bound_hi (", angle_bound_hi_, ") - angle_bound_lo (", angle_bound_lo_,
                 ") must be a positive multiple of 180");
  const std::vector<float> weights =
      GetRepeatedArgument<float>("weights", std::vector<float>{1.f, 1.f, 1.f, 1.f});
  DOPPIO_ENFORCE(weights.size() == 4, "weights must be 4 floats (wx, wy, ww, wh), got ",
                 weights.size());
  for (int k = 0; k < 4; ++k) {
    DOPPIO_ENFORCE(std::isfinite(weights[k]) && weights[k] != 0, "weights[", k, "] (", weights[k],
                   ") must be a finite non-zero number");
    weights_[k] = weights[k];
  }
}

void BBoxTransformOp::TransformRoI(const float* p, const float* deltas, int64_t classes,
                                   float scale, float height, float width, float* out) const {
  const float clip = boxes::DefaultDeltaClip();
  const float after = apply_scale_ ? scale : 1.f;
  if (!rotated_) {
    const boxes::Box box{p[0] / scale, p[1] / scale, p[2] / scale, p[3] / scale};
    for (int64_t k = 0; k < classes; ++k) {
      const boxes::Box moved = boxes::ApplyDeltas(box, deltas + k * 4, weights_, clip,
                                                  correct_transform_coords_, plus_one_);
      const boxes::Box clipped = boxes::ClipToImage(moved, height, width, plus_one_);
      float* q = out + k * 4;
      q[0] = clipped.x1 * after, q[1] = clipped.y1 * after;
      q[2] = clipped.x2 * after, q[3] = clipped.y2 * after;
    }
    return;
  }
  // The angle is not scaled.
  const boxes::RotatedBox box{p[0] / scale, p[1] / scale, p[2] / scale, p[3] / scale, p[4]};
  const boxes::AngleBound bound{angle_bound_on_, angle_bound_lo_, angle_bound_hi_};
  for (int64_t k = 0; k < classes; ++k) {
    const boxes::RotatedBox clipped = boxes::ClipRotatedToImage(
        boxes::ApplyRotatedDeltas(box, deltas + k * 5, weights_, clip, bound), height, width,
        clip_angle_thresh_, plus_one_);
    float* q = out + k * 5;
    q[0] = clipped.cx * after, q[1] = clipped.cy * after;
    q[2] = clipped.w * after, q[3] = clipped.h * after, q[4] = clipped.angle;
  }
}

void BBoxTransformOp::RunOnDevice() {
  const Tensor& rois = Input(0);
  const Tensor& deltas = Input(1);
  const Tensor& im_info = Input(2);
  for (int i = 0; i < 3; ++i) CheckFloat(*this, i, Input(i));
  const int64_t dim = rotated_ ? 5 : 4;
  DOPPIO_ENFORCE(rois.ndim() == 2 && (rois.dim(1) == dim || rois.dim(1) == dim + 1), "rois '",
                 input_name(0), "' must be [M, ", dim, "] or [M, ", dim + 1, "]",
                 rotated_ ? " (rotated boxes)" : "", ", not ", rois.dims());
  DOPPIO_ENFORCE(deltas.ndim() == 2 && deltas.dim(0) == rois.dim(0) && deltas.dim(1) % dim == 0,
                 "deltas '", input_name(1), "' must be [", rois.dim(0), ", ", dim, " K]",
                 rotated_ ? "" : " (rotated boxes' 5 K need rotated=1)", ", not ", deltas.dims());
  DOPPIO_ENFORCE(im_info.ndim() == 2 && im_info.dim(1) == 3, "im_info '", input_name(2),
                 "' must be [B, 3] (height, width, scale), not ", im_info.dims());
  const int64_t images = im_info.dim(0), classes = deltas.dim(1) / dim, cols = rois.dim(1);
  const std::vector<int64_t> counts = RoIsPerImage(*this, rois, dim, images);
  Tensor* out = Output(0);
  out->ResizeLike(deltas);
  const float* info = im_info.data<float>();
  int64_t row = 0;
  for (int64_t image = 0; image < images; ++image) {
    const float scale = info[image * 3 + 2];
    DOPPIO_ENFORCE(std::isfinite(scale) && scale > 0, "im_info row ", image, " has scale ", scale,
                   "; it must be positive");
    // Beyond 2^30 pixels Caffe2's int image size would overflow.
    for (int k = 0; k < 2; ++k) {
      const float side = info[image * 3 + k] / scale;
      DOPPIO_ENFORCE(std::isfinite(side) && std::fabs(side) < 1073741824.f, "im_info row ", image,
                     " has ", k == 0 ? "height " : "width ", info[image * 3 + k],
                     ", out of range for scale ", scale);
    }
    // Caffe2's int(height / scale + 0.5): the unscaled image's size.
    const float height = static_cast<float>(static_cast<int64_t>(info[image * 3] / scale + 0.5f));
    const float width =
        static_cast<float>(static_cast<int64_t>(info[image * 3 + 1] / scale + 0.5f));
    for (int64_t end = row + counts[image]; row < end; ++row) {
      TransformRoI(rois.data<float>() + row * cols + (cols - dim),
                   deltas.data<float>() + row * classes * dim, classes, scale, height, width,
                   out->mutable_data<float>() + row * classes * dim);
    }
  }
  if (OutputSize() > 1) {
    Tensor* splits = Output(1);
    splits->Resize({images});
    float* s = splits->mutable_data<float>();
    for (int64_t i = 0; i < images; ++i) s[i] = static_cast<float>(counts[i]);
  }
}

REGISTER_CPU_OPERATOR(BBoxTransform, BBoxTransformOp);

OPERATOR_SCHEMA(BBoxTransform)
    .NumInputs(3)
    .NumOutputs(1, 2)
    .Arg("weights", "(floats, default [1, 1, 1, 1]) wx, wy, ww, wh dividing the deltas")
    .Arg("apply_scale",
         "(bool, default true) scale the boxes back by im_info's scale after the transform "
         "(Detectron: false)")
    .Arg("correct_transform_coords",
         "(bool, default false) Detectron's box transform: the far corner minus one pixel")
    .Arg("legacy_plus_one", "(bool, default true) widths and heights are x2 - x1 + 1")
    .Arg("rotated",
         "(bool, default false) boxes are (ctr_x, ctr_y, w, h, angle in degrees) "
         "and deltas (dx, dy, dw, dh, da in radians)")
    .Arg("angle_bound_on", "(bool, default true) rotated: fold angles into [lo, hi]")
    .Arg("angle_bound_lo", "(int, default -90) rotated: the fold's low end")
    .Arg("angle_bound_hi", "(int, default 90) rotated: the fold's high end")
    .Arg("clip_angle_thresh",
         "(float, default 1) rotated: boxes within this many degrees "
         "of upright are clipped into the image")
    .Input(0, "rois",
           "[M, 4] or [M, 5] (image index, x1, y1, x2, y2), grouped by image; "
           "rotated: [M, 5] or [M, 6]")
    .Input(1, "deltas", "[M, 4 K]: dx, dy, dw, dh per class; rotated: [M, 5 K]")
    .Input(2, "im_info", "[B, 3]: height, width, scale of each image")
    .Output(0, "box_out",
            "[M, 4 K] (rotated: [M, 5 K]): each class's box, clipped into its "
            "image")
    .Output(1, "roi_batch_splits", "[B] (float): RoIs per image")
    .Doc("Applies bounding-box regression deltas to RoIs (Faster R-CNN's second stage).");

SHOULD_NOT_DO_GRADIENT(BBoxTransform,
                       "an inference op (as in Caffe2): the deltas train through their losses");

}  // namespace doppio
