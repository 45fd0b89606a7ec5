#include "operators/roi_pool_op.h"

#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/box_utils.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

void CheckOrder(const OperatorBase& op) {
  const std::string order = op.GetSingleArgument<std::string>("order", "NCHW");
  DOPPIO_ENFORCE(order == "NCHW", "order '", order, "': RoIPool is NCHW only, as Caffe2's");
}

std::pair<int64_t, int64_t> ReadPooled(const OperatorBase& op) {
  const int64_t h = op.GetSingleArgument<int64_t>("pooled_h", 1);
  const int64_t w = op.GetSingleArgument<int64_t>("pooled_w", 1);
  DOPPIO_ENFORCE(h > 0 && w > 0, "pooled_h and pooled_w (", h, ", ", w, ") must be positive");
  return {h, w};
}

// X float32 [N, C, H, W] and RoIs float32 [R, 5].
void CheckInputs(const OperatorBase& op, const Tensor& x, const Tensor& rois) {
  DOPPIO_ENFORCE(x.ndim() == 4 && x.dtype() == DataType::kFloat, "X '", op.input_name(0),
                 "' must be float32 [N, C, H, W], not ", x.DebugString());
  DOPPIO_ENFORCE(rois.ndim() == 2 && rois.dim(1) == 5 && rois.dtype() == DataType::kFloat, "RoIs '",
                 op.input_name(1), "' must be float32 [R, 5] (batch index, x1, y1, x2, y2), not ",
                 rois.DebugString());
}

// One RoI on the pixel grid: its image and its rounded corners.
struct PixelRoI {
  int64_t image, start_w, start_h, width, height;
};

PixelRoI RoundRoI(const float* roi, int64_t r, int64_t batch, float scale) {
  for (int k = 1; k < 5; ++k) {
    // Beyond 2^30 pixels the rounded corners would overflow.
    DOPPIO_ENFORCE(std::isfinite(roi[k]) && std::fabs(roi[k] * scale) < 1073741824.f, "RoI ", r,
                   " has coordinate ", roi[k], ", out of range");
  }
  PixelRoI p;
  p.image = boxes::ImageIndex(roi[0], r, batch, "X");
  p.start_w = static_cast<int64_t>(std::round(roi[1] * scale));
  p.start_h = static_cast<int64_t>(std::round(roi[2] * scale));
  p.width = std::max<int64_t>(static_cast<int64_t>(std::round(roi[3] * scale)) - p.start_w + 1, 1);
  p.height = std::max<int64_t>(static_cast<int64_t>(std::round(roi[4] * scale)) - p.start_h + 1, 1);
  return p;
}

// [start, end) of bin `i` of `bins` over `size` pixels from `origin`,
// clipped to [0, limit].
std::pair<int64_t, int64_t> BinRange(int64_t i, int64_t bins, int64_t size, int64_t origin,
                                     int64_t limit) {
  const float bin = static_cast<float>(size) / static_cast<float>(bins);
  const int64_t start = static_cast<int64_t>(std::floor(static_cast<float>(i) * bin)) + origin;
  const int64_t end = static_cast<int64_t>(std::ceil(static_cast<float>(i + 1) * bin)) + origin;
  const auto clip = [limit](int64_t v) { return std::min(std::max<int64_t>(v, 0), limit); };
  return {clip(start), clip(end)};
}

}  // namespace

RoIPoolOp::RoIPoolOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0),
      spatial_scale_(GetSingleArgument<float>("spatial_scale", 1.f)) {
  CheckOrder(*this);
  std::tie(pooled_h_, pooled_w_) = ReadPooled(*this);
  DOPPIO_ENFORCE(std::isfinite(spatial_scale_) && spatial_scale_ > 0, "spatial_scale (",
                 spatial_scale_, ") must be a positive number");
  DOPPIO_ENFORCE(OutputSize() == (is_test_ ? 1 : 2), "RoIPool has ",
                 is_test_ ? "1 output" : "2 outputs (Y, argmaxes)",
                 is_test_ ? " with is_test" : " unless is_test");
}

void RoIPoolOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& rois = Input(1);
  CheckInputs(*this, X, rois);
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  std::vector<PixelRoI> pixel_rois;
  for (int64_t r = 0; r < R; ++r) {
    pixel_rois.push_back(RoundRoI(rois.data<float>() + r * 5, r, N, spatial_scale_));
  }
  Tensor* Y = Output(0);
  Y->Resize({R, C, pooled_h_, pooled_w_});
  int32_t* argmax = nullptr;
  if (!is_test_) {
    Output(1)->Resize({R, C, pooled_h_, pooled_w_});
    argmax = Output(1)->mutable_data<int32_t>();
  }
  const float* x = X.data<float>();
  float* y = Y->mutable_data<float>();
  const int64_t bins = pooled_h_ * pooled_w_;
  ParallelFor(
      R * C,
      [&](int64_t begin, int64_t end) {
        for (int64_t rc = begin; rc < end; ++rc) {
          const PixelRoI& p = pixel_rois[rc / C];
          const float* plane = x + (p.image * C + rc % C) * H * W;
          for (int64_t ph = 0; ph < pooled_h_; ++ph) {
            const auto [h0, h1] = BinRange(ph, pooled_h_, p.height, p.start_h, H);
            for (int64_t pw = 0; pw < pooled_w_; ++pw) {
              const auto [w0, w1] = BinRange(pw, pooled_w_, p.width, p.start_w, W);
              const bool empty = h1 <= h0 || w1 <= w0;
              float best = empty ? 0.f : -FLT_MAX;
              int64_t at = -1;
              for (int64_t h = h0; h < h1; ++h) {
                for (int64_t w = w0; w < w1; ++w) {
                  if (plane[h * W + w] > best) {
                    best = plane[h * W + w];
                    at = h * W + w;
                  }
                }
              }
              y[rc * bins + ph * pooled_w_ + pw] = best;
              if (argmax != nullptr)
                argmax[rc * bins + ph * pooled_w_ + pw] = static_cast<int32_t>(at);
            }
          }
        }
      },
      RowsPerThread(bins * 16));
}

RoIPoolGradientOp::RoIPoolGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace) {
  CheckOrder(*this);
  std::tie(pooled_h_, pooled_w_) = ReadPooled(*this);
}

void RoIPoolGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& rois = Input(1);
  const Tensor& argmaxes = Input(2);
  const Tensor& dY = Input(3);
  CheckInputs(*this, X, rois);
  const int64_t N = X.dim(0), C = X.dim(1), plane = X.dim(2) * X.dim(3), R = rois.dim(0);
  const std::vector<int64_t> y_dims{R, C, pooled_h_, pooled_w_};
  DOPPIO_ENFORCE(argmaxes.dims() == y_dims && argmaxes.dtype() == DataType::kInt32, "argmaxes '",
                 input_name(2), "' must be int32 ", y_dims, ", not ", argmaxes.DebugString());
  DOPPIO_ENFORCE(dY.dims() == y_dims && dY.dtype() == DataType::kFloat, "dY '", input_name(3),
                 "' must be float32 ", y_dims, ", not ", dY.DebugString());
  std::vector<int64_t> images(R);
  const float* r = rois.data<float>();
  for (int64_t i = 0; i < R; ++i) {
    images[i] = boxes::ImageIndex(r[i * 5], i, N, "X");
  }
  const int32_t* a = argmaxes.data<int32_t>();
  for (int64_t i = 0; i < argmaxes.numel(); ++i) {
    DOPPIO_ENFORCE(a[i] >= -1 && a[i] < plane, "argmaxes[", i, "] = ", a[i],
                   " is not a pixel of X's ", X.dim(2), " x ", X.dim(3), " planes (or -1)");
  }
  Tensor* dX = Output(0);
  dX->ResizeLike(X);
  float* dx = dX->mutable_data<float>();
  std::fill(dx, dx + dX->numel(), 0.f);
  const float* dy = dY.data<float>();
  const int64_t bins = pooled_h_ * pooled_w_;
  ParallelFor(
      C,
      [&](int64_t c0, int64_t c1) {
        for (int64_t i = 0; i < R; ++i) {
          for (int64_t c = c0; c < c1; ++c) {
            float* d = dx + (images[i] * C + c) * plane;
            const int64_t at = (i * C + c) * bins;
            for (int64_t b = 0; b < bins; ++b) {
              if (a[at + b] >= 0) d[a[at + b]] += dy[at + b];
            }
          }
        }
      },
      RowsPerThread(R * bins));
}

REGISTER_CPU_OPERATOR(RoIPool, RoIPoolOp);
REGISTER_CPU_OPERATOR(RoIPoolGradient, RoIPoolGradientOp);

namespace {

class GetRoIPoolGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(Def().output_size() == 2,
                   "RoIPool's gradient needs its argmaxes: run it without is_test");
    return SingleGradientDef("RoIPoolGradient", "", {I(0), I(1), O(1), GO(0)}, {GI(0)},
                             Def().arg());
  }
};

}  // namespace

OPERATOR_SCHEMA(RoIPool)
    .NumInputs(2)
    .NumOutputs(1, 2)
    .Arg("is_test", "(int, default 0) 1: no argmaxes output (inference)")
    .Arg("spatial_scale", "(float, default 1) X's scale relative to the RoIs' image")
    .Arg("pooled_h", "(int, default 1) Y's height")
    .Arg("pooled_w", "(int, default 1) Y's width")
    .Arg("order", "(string, default NCHW) NCHW only")
    .Input(0, "X", "[N, C, H, W] float32")
    .Input(1, "RoIs", "[R, 5] batch index, x1, y1, x2, y2")
    .Output(0, "Y", "[R, C, pooled_h, pooled_w]: each bin's maximum (0 if empty)")
    .Output(1, "argmaxes", "int32, Y's shape: h * W + w of each maximum, -1 if empty")
    .Doc(
        "Fast R-CNN's RoI max pooling on the pixel grid: corners rounded after "
        "spatial_scale, bins floor/ceil-split.");

OPERATOR_SCHEMA(RoIPoolGradient)
    .NumInputs(4)
    .NumOutputs(1)
    .Arg("pooled_h", "as RoIPool's")
    .Arg("pooled_w", "as RoIPool's")
    .Arg("order", "as RoIPool's")
    .Input(0, "X", "RoIPool's X")
    .Input(1, "RoIs", "RoIPool's RoIs")
    .Input(2, "argmaxes", "RoIPool's argmaxes")
    .Input(3, "dY", "gradient of Y")
    .Output(0, "dX", "each bin's gradient added at its maximum")
    .Doc("Gradient of RoIPool with respect to X.");

REGISTER_GRADIENT(RoIPool, GetRoIPoolGradient);
SHOULD_NOT_DO_GRADIENT(RoIPoolGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
