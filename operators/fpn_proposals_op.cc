#include "operators/fpn_proposals_op.h"

#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"

namespace doppio {
namespace {

FpnLevels ReadLevels(const OperatorBase& op) {
  FpnLevels l;
  l.rpn_min = op.GetSingleArgument<int64_t>("rpn_min_level", 2);
  l.rpn_max = op.GetSingleArgument<int64_t>("rpn_max_level", 6);
  l.roi_min = op.GetSingleArgument<int64_t>("roi_min_level", 2);
  l.roi_max = op.GetSingleArgument<int64_t>("roi_max_level", 5);
  l.canonical_scale = op.GetSingleArgument<int64_t>("roi_canonical_scale", 224);
  l.canonical_level = op.GetSingleArgument<int64_t>("roi_canonical_level", 4);
  // Later Caffe2 spells it rpn_post_nms_topN; the first one post_nms_topN.
  l.post_nms_top_n = op.GetSingleArgument<int64_t>(
      "rpn_post_nms_topN", op.GetSingleArgument<int64_t>("post_nms_topN", 2000));
  l.plus_one = op.GetSingleArgument<bool>("legacy_plus_one", true) ? 1.f : 0.f;
  DOPPIO_ENFORCE(l.rpn_min <= l.rpn_max && l.roi_min <= l.roi_max && l.rpn_max - l.rpn_min < 64 &&
                     l.roi_max - l.roi_min < 64,
                 "levels rpn ", l.rpn_min, "..", l.rpn_max, " and roi ", l.roi_min, "..", l.roi_max,
                 " must be ranges of at most 64 levels");
  DOPPIO_ENFORCE(l.canonical_scale > 0, "roi_canonical_scale must be positive");
  return l;
}

int64_t RpnLevelCount(const FpnLevels& l) { return l.rpn_max - l.rpn_min + 1; }
int64_t RoILevelCount(const FpnLevels& l) { return l.roi_max - l.roi_min + 1; }

// RoIs of 5 floats each into `out`, as [n, 5].
void WriteRois(const std::vector<float>& rois, Tensor* out) {
  out->Resize({static_cast<int64_t>(rois.size() / 5), 5});
  std::copy(rois.begin(), rois.end(), out->mutable_data<float>());
}

// The best post_nms_top_n RoIs of all levels' inputs (rois, then probs).
std::vector<float> Collect(const OperatorBase& op, const FpnLevels& l,
                           const std::vector<const Tensor*>& inputs) {
  const int64_t levels = RpnLevelCount(l);
  DOPPIO_ENFORCE(static_cast<int64_t>(inputs.size()) == 2 * levels, "levels ", l.rpn_min, "..",
                 l.rpn_max, " take ", 2 * levels,
                 " inputs (the RoIs of each, then the scores), not ", inputs.size());
  std::vector<float> rois, scores;
  for (int64_t i = 0; i < levels; ++i) {
    const Tensor& r = *inputs[i];
    const Tensor& s = *inputs[levels + i];
    DOPPIO_ENFORCE(r.ndim() == 2 && r.dim(1) == 5 && r.dtype() == DataType::kFloat, "'",
                   op.input_name(i), "' must be float32 [n, 5], not ", r.DebugString());
    DOPPIO_ENFORCE(s.numel() == r.dim(0) && s.dtype() == DataType::kFloat, "'",
                   op.input_name(levels + i), "' must hold ", r.dim(0), " float32 scores, not ",
                   s.DebugString());
    rois.insert(rois.end(), r.data<float>(), r.data<float>() + r.numel());
    scores.insert(scores.end(), s.data<float>(), s.data<float>() + s.numel());
  }
  std::vector<int64_t> all(scores.size());
  std::iota(all.begin(), all.end(), 0);
  std::vector<int64_t> order = boxes::ByDescendingScore(scores.data(), all);
  if (l.post_nms_top_n > 0 && l.post_nms_top_n < static_cast<int64_t>(order.size())) {
    order.resize(l.post_nms_top_n);
  }
  std::vector<float> top;
  for (int64_t i : order) top.insert(top.end(), &rois[5 * i], &rois[5 * i] + 5);
  return top;
}

// The FPN level of each RoI (5 values each): eq. 1, clipped.
std::vector<int64_t> LevelsOf(const FpnLevels& l, const std::vector<float>& rois) {
  std::vector<int64_t> levels;
  for (size_t i = 0; i < rois.size(); i += 5) {
    const boxes::Box box = boxes::BoxAt(&rois[i + 1]);
    const float area = boxes::Area(box, l.plus_one);
    DOPPIO_ENFORCE(area >= 0, "RoI ", i / 5, " (", box.x1, ", ", box.y1, ", ", box.x2, ", ", box.y2,
                   ") has a negative area");
    const float scaled = std::sqrt(area) / static_cast<float>(l.canonical_scale) + 1e-6f;
    const float level = std::floor(static_cast<float>(l.canonical_level) + std::log2(scaled));
    levels.push_back(static_cast<int64_t>(
        std::min(std::max(level, static_cast<float>(l.roi_min)), static_cast<float>(l.roi_max))));
  }
  return levels;
}

// Writes each level's RoIs to outputs first.. and rois_idx_restore last.
void Distribute(const FpnLevels& l, const std::vector<float>& rois, int first,
                const std::function<Tensor*(int)>& output) {
  const std::vector<int64_t> levels = LevelsOf(l, rois);
  std::vector<int32_t> restore(levels.size());
  int32_t position = 0;
  for (int64_t k = 0; k < RoILevelCount(l); ++k) {
    std::vector<float> picked;
    for (size_t i = 0; i < levels.size(); ++i) {
      if (levels[i] != l.roi_min + k) continue;
      picked.insert(picked.end(), &rois[5 * i], &rois[5 * i] + 5);
      restore[i] = position++;
    }
    WriteRois(picked, output(first + static_cast<int>(k)));
  }
  Tensor* out = output(first + static_cast<int>(RoILevelCount(l)));
  out->Resize({static_cast<int64_t>(restore.size())});
  std::copy(restore.begin(), restore.end(), out->mutable_data<int32_t>());
}

}  // namespace

CollectRpnProposalsOp::CollectRpnProposalsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), levels_(ReadLevels(*this)) {}

void CollectRpnProposalsOp::RunOnDevice() {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < InputSize(); ++i) inputs.push_back(&Input(i));
  const std::vector<float> rois = Collect(*this, levels_, inputs);
  WriteRois(rois, Output(0));
}

DistributeFpnProposalsOp::DistributeFpnProposalsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), levels_(ReadLevels(*this)) {
  DOPPIO_ENFORCE(OutputSize() == RoILevelCount(levels_) + 1, "RoI levels ", levels_.roi_min, "..",
                 levels_.roi_max, " give ", RoILevelCount(levels_) + 1,
                 " outputs (one per level, then rois_idx_restore), not ", OutputSize());
}

void DistributeFpnProposalsOp::RunOnDevice() {
  const Tensor& in = Input(0);
  DOPPIO_ENFORCE(
      in.ndim() == 2 && (in.dim(1) == 4 || in.dim(1) == 5) && in.dtype() == DataType::kFloat,
      "rois '", input_name(0), "' must be float32 [m, 4] or [m, 5], not ", in.DebugString());
  std::vector<float> rois;
  for (int64_t i = 0; i < in.dim(0); ++i) {
    if (in.dim(1) == 4) rois.push_back(0.f);
    rois.insert(rois.end(), in.data<float>() + i * in.dim(1),
                in.data<float>() + (i + 1) * in.dim(1));
  }
  Distribute(levels_, rois, 0, [this](int i) { return Output(i); });
}

CollectAndDistributeFpnRpnProposalsOp::CollectAndDistributeFpnRpnProposalsOp(const OperatorDef& def,
                                                                             Workspace* workspace)
    : Operator<CPUContext>(def, workspace), levels_(ReadLevels(*this)) {
  DOPPIO_ENFORCE(OutputSize() == RoILevelCount(levels_) + 2, "RoI levels ", levels_.roi_min, "..",
                 levels_.roi_max, " give ", RoILevelCount(levels_) + 2,
                 " outputs (rois, one per level, rois_idx_restore), not ", OutputSize());
}

void CollectAndDistributeFpnRpnProposalsOp::RunOnDevice() {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < InputSize(); ++i) inputs.push_back(&Input(i));
  const std::vector<float> rois = Collect(*this, levels_, inputs);
  WriteRois(rois, Output(0));
  Distribute(levels_, rois, 1, [this](int i) { return Output(i); });
}

REGISTER_CPU_OPERATOR(CollectRpnProposals, CollectRpnProposalsOp);
REGISTER_CPU_OPERATOR(DistributeFpnProposals, DistributeFpnProposalsOp);
REGISTER_CPU_OPERATOR(CollectAndDistributeFpnRpnProposals, CollectAndDistributeFpnRpnProposalsOp);

namespace {

void LevelArgs(OpSchema& schema) {
  schema.Arg("roi_canonical_scale", "(int, default 224) FPN's canonical RoI size")
      .Arg("roi_canonical_level", "(int, default 4) the level of a canonical-size RoI")
      .Arg("roi_min_level", "(int, default 2) the lowest RoI level")
      .Arg("roi_max_level", "(int, default 5) the highest RoI level")
      .Arg("legacy_plus_one", "(bool, default true) widths and heights are x2 - x1 + 1");
}

void CollectArgs(OpSchema& schema) {
  schema.Arg("rpn_min_level", "(int, default 2) the lowest RPN level")
      .Arg("rpn_max_level", "(int, default 6) the highest RPN level")
      .Arg("rpn_post_nms_topN",
           "(int, default 2000; also read as post_nms_topN) proposals kept; <= 0: all");
}

}  // namespace

OPERATOR_SCHEMA(CollectRpnProposals)
    .NumInputs(2, INT_MAX)
    .NumOutputs(1)
    .Apply(CollectArgs)
    .Input(0, "rpn_rois_fpn{min..max}, rpn_roi_probs_fpn{min..max}",
           "each RPN level's proposals [n, 5] (GenerateProposals' rois), then their scores")
    .Output(0, "rois", "[m, 5] the best rpn_post_nms_topN of all levels, best first")
    .Doc("Merges the RPN proposals of FPN's levels and keeps the best (Detectron).");

OPERATOR_SCHEMA(DistributeFpnProposals)
    .NumInputs(1)
    .NumOutputs(2, INT_MAX)
    .Apply(LevelArgs)
    .Input(0, "rois", "[m, 5] or [m, 4] proposals")
    .Output(0, "rois_fpn{min..max}, rois_idx_restore",
            "each RoI level's proposals [k, 5] in rois' order, then int32 [m]: the position of "
            "each of rois in the levels' concatenation")
    .Doc(
        "Sends each RoI to its FPN level: floor(canonical_level + log2(sqrt(area) / "
        "canonical_scale + 1e-6)), clipped (Detectron).");

OPERATOR_SCHEMA(CollectAndDistributeFpnRpnProposals)
    .NumInputs(2, INT_MAX)
    .NumOutputs(3, INT_MAX)
    .Apply(LevelArgs)
    .Apply(CollectArgs)
    .Input(0, "rpn_rois_fpn{min..max}, rpn_roi_probs_fpn{min..max}", "as CollectRpnProposals'")
    .Output(0, "rois, rois_fpn{min..max}, rois_idx_restore",
            "CollectRpnProposals' rois, then DistributeFpnProposals' outputs for them")
    .Doc("CollectRpnProposals then DistributeFpnProposals, as one op (Detectron).");

SHOULD_NOT_DO_GRADIENT(CollectRpnProposals, "a selection of proposals (inference, as in Caffe2)");
SHOULD_NOT_DO_GRADIENT(DistributeFpnProposals, "a routing of proposals (inference, as in Caffe2)");
SHOULD_NOT_DO_GRADIENT(CollectAndDistributeFpnRpnProposals,
                       "a selection of proposals (inference, as in Caffe2)");

}  // namespace doppio
