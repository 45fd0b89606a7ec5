#include "operators/box_with_nms_limit_op.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"

namespace doppio {
namespace {

// [rows, width] from [rows, width] or [rows, width, 1, 1].
int64_t CheckMatrix(const OperatorBase& op, int index, const Tensor& t, int64_t rows) {
  const bool shaped = t.ndim() == 2 || (t.ndim() == 4 && t.dim(2) == 1 && t.dim(3) == 1);
  DOPPIO_ENFORCE(shaped && t.dtype() == DataType::kFloat && (rows < 0 || t.dim(0) == rows), "'",
                 op.input_name(index), "' must be float32 [",
                 rows < 0 ? std::string("N") : std::to_string(rows),
                 ", ...] or [N, ..., 1, 1], not ", t.DebugString());
  return t.dim(1);
}

// The boxes of each image: `splits` (batch_splits, input 2) or all in one.
std::vector<int64_t> BoxesPerImage(const OperatorBase& op, const Tensor* splits_in, int64_t total) {
  if (splits_in == nullptr) return {total};
  const Tensor& splits = *splits_in;
  DOPPIO_ENFORCE(splits.ndim() == 1 && splits.dtype() == DataType::kFloat, "batch_splits '",
                 op.input_name(2), "' must be float32 [B], not ", splits.DebugString());
  std::vector<int64_t> counts;
  int64_t sum = 0;
  for (int64_t b = 0; b < splits.dim(0); ++b) {
    const float v = splits.data<float>()[b];
    DOPPIO_ENFORCE(v >= 0 && v == std::floor(v) && v <= total, "batch_splits[", b, "] = ", v,
                   " is not a count of boxes");
    counts.push_back(static_cast<int64_t>(v));
    sum += counts.back();
  }
  DOPPIO_ENFORCE(sum == total, "batch_splits '", op.input_name(2), "' add up to ", sum,
                 ", but there are ", total, " boxes");
  return counts;
}

}  // namespace

BoxWithNMSLimitOp::BoxWithNMSLimitOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      score_threshold_(GetSingleArgument<float>("score_thresh", 0.05f)),
      nms_threshold_(GetSingleArgument<float>("nms", 0.3f)),
      detections_per_image_(GetSingleArgument<int64_t>("detections_per_im", 100)),
      soft_nms_(GetSingleArgument<bool>("soft_nms_enabled", false)),
      soft_nms_sigma_(GetSingleArgument<float>("soft_nms_sigma", 0.5f)),
      soft_nms_min_score_(GetSingleArgument<float>("soft_nms_min_score_thres", 0.001f)),
      plus_one_(GetSingleArgument<bool>("legacy_plus_one", true) ? 1.f : 0.f),
      box_dim_(GetSingleArgument<bool>("rotated", false) ? 5 : 4),
      cls_agnostic_(GetSingleArgument<bool>("cls_agnostic_bbox_reg", false)),
      include_bg_(GetSingleArgument<bool>("input_boxes_include_bg_cls", true)),
      output_include_bg_(GetSingleArgument<bool>("output_classes_include_bg_cls", true)) {
  const std::string method = GetSingleArgument<std::string>("soft_nms_method", "linear");
  DOPPIO_ENFORCE(method == "linear" || method == "gaussian" || method == "hard",
                 "soft_nms_method '", method, "' is not linear, gaussian or hard");
  soft_nms_method_ = method == "linear" ? 1 : method == "gaussian" ? 2 : 0;
  DOPPIO_ENFORCE(!soft_nms_ || soft_nms_sigma_ > 0, "soft_nms_sigma must be positive");
}

// One image's kept rows per class (class 0, the background, keeps none):
// NMS or soft-NMS per class, then the per-image limit. `s` ([n, K]) is
// decayed in place by soft-NMS.
std::vector<std::vector<int64_t>> BoxWithNMSLimitOp::KeepsOfImage(int64_t n, int64_t K,
                                                                  const float* bx, int64_t box_cols,
                                                                  float* s) const {
  std::vector<std::vector<int64_t>> keeps(K);
  const bool rotated = box_dim_ == 5;
  for (int64_t j = 1; j < K; ++j) {
    const int64_t sc = ScoreColumn(j);
    const float* class_boxes = bx + BoxColumn(j) * box_dim_;
    std::vector<int64_t> above;
    std::vector<float> column(n);
    for (int64_t i = 0; i < n; ++i) {
      column[i] = s[i * K + sc];
      if (column[i] > score_threshold_) above.push_back(i);
    }
    keeps[j] = soft_nms_ ? boxes::SoftNms(class_boxes, box_cols, s + sc, K, above, soft_nms_sigma_,
                                          nms_threshold_, soft_nms_min_score_, soft_nms_method_, -1,
                                          plus_one_, rotated)
                         : boxes::Nms(class_boxes, box_cols,
                                      boxes::ByDescendingScore(column.data(), above),
                                      nms_threshold_, -1, plus_one_, rotated);
  }
  // detections_per_im: exactly the image's best scores, as Caffe2 keeps
  // (Detectron's Python kept every tie at the cut). Caffe2's unstable sort
  // leaves which tie goes unspecified; here the lower class, then the earlier
  // kept box, stays.
  struct Entry {
    float score;
    int64_t cls, pos;
  };
  std::vector<Entry> kept;
  for (int64_t j = 1; j < K; ++j) {
    for (size_t p = 0; p < keeps[j].size(); ++p) {
      kept.push_back({s[keeps[j][p] * K + ScoreColumn(j)], j, static_cast<int64_t>(p)});
    }
  }
  if (detections_per_image_ > 0 && static_cast<int64_t>(kept.size()) > detections_per_image_) {
    std::stable_sort(kept.begin(), kept.end(),
                     [](const Entry& a, const Entry& b) { return a.score > b.score; });
    kept.resize(detections_per_image_);
    std::sort(kept.begin(), kept.end(), [](const Entry& a, const Entry& b) {
      return a.cls != b.cls ? a.cls < b.cls : a.pos < b.pos;
    });
    std::vector<std::vector<int64_t>> limited(K);
    for (const Entry& e : kept) limited[e.cls].push_back(keeps[e.cls][e.pos]);
    for (int64_t j = 1; j < K; ++j) keeps[j].swap(limited[j]);
  }
  return keeps;
}

void BoxWithNMSLimitOp::RunOnDevice() {
  const Tensor& scores_in = Input(0);
  const Tensor& boxes_in = Input(1);
  const int64_t K = CheckMatrix(*this, 0, scores_in, -1), N = scores_in.dim(0);
  DOPPIO_ENFORCE(K >= 1, "scores '", input_name(0), "' must have a column per class, not ",
                 scores_in.dims());
  const int64_t dim = box_dim_, box_cols = (BoxColumn(K - 1) + 1) * dim;
  DOPPIO_ENFORCE(CheckMatrix(*this, 1, boxes_in, N) == box_cols, "boxes '", input_name(1),
                 "' must have ", box_cols, " columns (", dim, " per box",
                 cls_agnostic_ ? ", one box for all classes"
                 : include_bg_ ? ", one box per class of scores"
                               : ", one box per foreground class",
                 "), not ", boxes_in.dim(1));
  const std::vector<int64_t> counts =
      BoxesPerImage(*this, InputSize() > 2 ? &Input(2) : nullptr, N);
  const int64_t B = static_cast<int64_t>(counts.size());
  const float* boxes = boxes_in.data<float>();
  // Soft-NMS decays scores: it works on a copy, which the outputs report.
  std::vector<float> scores(scores_in.data<float>(), scores_in.data<float>() + N * K);
  std::vector<float> out_scores, out_boxes, out_classes;
  std::vector<int32_t> out_keeps, keeps_size(B * K, 0);
  std::vector<int64_t> per_image(B, 0);
  int64_t offset = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = counts[b];
    float* s = scores.data() + offset * K;
    const float* bx = boxes + offset * box_cols;
    const std::vector<std::vector<int64_t>> keeps = KeepsOfImage(n, K, bx, box_cols, s);
    for (int64_t j = 0; j < K; ++j) {
      for (int64_t i : keeps[j]) {
        out_scores.push_back(s[i * K + ScoreColumn(j)]);
        const float* box = bx + i * box_cols + BoxColumn(j) * dim;
        out_boxes.insert(out_boxes.end(), box, box + dim);
        out_classes.push_back(static_cast<float>(output_include_bg_ ? j : j - 1));
        out_keeps.push_back(static_cast<int32_t>(i));
      }
      keeps_size[b * K + j] = static_cast<int32_t>(keeps[j].size());
      per_image[b] += static_cast<int64_t>(keeps[j].size());
    }
    offset += n;
  }
  const int64_t total = static_cast<int64_t>(out_scores.size());
  const auto emit = [&](int index, std::vector<int64_t> dims, const auto& values) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    Tensor* t = Output(index);
    t->Resize(dims);
    std::copy(values.begin(), values.end(), t->template mutable_data<T>());
  };
  emit(0, {total}, out_scores);
  emit(1, {total, dim}, out_boxes);
  emit(2, {total}, out_classes);
  if (OutputSize() > 3) {
    emit(3, {B}, std::vector<float>(per_image.begin(), per_image.end()));
  }
  if (OutputSize() > 4) {
    emit(4, {total}, out_keeps);
    emit(5, {B, K}, keeps_size);
  }
}

REGISTER_CPU_OPERATOR(BoxWithNMSLimit, BoxWithNMSLimitOp);

OPERATOR_SCHEMA(BoxWithNMSLimit)
    .NumInputs(2, 3)
    .NumOutputs({3, 4, 6})
    .Arg("score_thresh", "(float, default 0.05) boxes must score above it")
    .Arg("nms", "(float, default 0.3) NMS IoU threshold")
    .Arg("detections_per_im",
         "(int, default 100) kept per image (the best scores; of equal scores at the "
         "cut, the lower class, then the earlier box); <= 0: all")
    .Arg("soft_nms_enabled", "(bool, default false) soft-NMS instead of NMS")
    .Arg("soft_nms_method", "(string, default linear) linear, gaussian or hard")
    .Arg("soft_nms_sigma", "(float, default 0.5) the gaussian method's sigma")
    .Arg("soft_nms_min_score_thres", "(float, default 0.001) soft-NMS drops boxes decayed below")
    .Arg("legacy_plus_one", "(bool, default true) widths and heights are x2 - x1 + 1")
    .Arg("rotated",
         "(bool, default false) boxes are (ctr_x, ctr_y, w, h, angle in degrees), "
         "5 floats each; NMS uses their rotated IoU")
    .Arg("cls_agnostic_bbox_reg", "(bool, default false) one box per row for every class")
    .Arg("input_boxes_include_bg_cls",
         "(bool, default true) 0: boxes hold the K - 1 foreground classes only, and the "
         "scores' background is their last column")
    .Arg("output_classes_include_bg_cls",
         "(bool, default true) 0: output classes count from 0 at the first foreground class")
    .Input(0, "scores", "[N, K] class scores, class 0 the background")
    .Input(1, "boxes",
           "[N, 4 K] each class's box (rotated: 5 per box; see the arguments for "
           "class-agnostic and foreground-only boxes)")
    .Input(2, "batch_splits", "[B] (float, optional) boxes per image, in order")
    .Output(0, "scores", "[n] kept scores (soft-NMS: decayed)")
    .Output(1, "boxes", "[n, 4] kept boxes ([n, 5] rotated)")
    .Output(2, "classes", "[n] (float) their classes")
    .Output(3, "batch_splits", "[B] (float) kept per image")
    .Output(4, "keeps", "[n] (int32) each kept box's row within its image")
    .Output(5, "keeps_size", "[B, K] (int32) kept per image and class")
    .Doc(
        "Per-class NMS (or soft-NMS) and a per-image limit over detection boxes; the outputs "
        "run through images, then classes, each class best first.");

SHOULD_NOT_DO_GRADIENT(BoxWithNMSLimit, "a selection of boxes (as in Caffe2): not differentiable");

}  // namespace doppio
