#include "operators/resize_nd_op.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/gradient.h"
#include "core/limits.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// One axis: output j reads input index[j * taps + t] with weight[...];
// outside[j] marks a tf_crop_and_resize coordinate beyond the input.
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<char> outside;
};

// ONNX's coordinate transforms. Their "resized length" is in x scale, not
// rounded (as ONNX's reference computes it; with sizes given it is the
// output size).
double SourceCoordinate(const ResizeNdArgs& a, int64_t j, int64_t in, int64_t out, double scale,
                        double roi_start, double roi_end) {
  const double x = static_cast<double>(j);
  const double resized = static_cast<double>(in) * scale;
  const std::string& t = a.transform;
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (t == "align_corners") return resized > 1 ? x * (in - 1) / (resized - 1) : 0.0;
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  if (resized > 1) {
    return roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / (resized - 1);
  }
  return 0.5 * (roi_start + roi_end) * (in - 1);
}

int64_t NearestIndex(const std::string& mode, double x) {
  const double low = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(low);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x - low == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? low + 1 : low);
  return static_cast<int64_t>(std::round(x));
}

double CubicWeight(double d, double a) {
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

AxisTaps TapsFor(const ResizeNdArgs& a, int64_t in, int64_t out, double scale, double roi_start,
                 double roi_end) {
  AxisTaps taps;
  taps.taps = a.mode == "nearest" ? 1 : (a.mode == "linear" ? 2 : 4);
  taps.index.resize(out * taps.taps);
  taps.weight.resize(out * taps.taps);
  taps.outside.assign(out, 0);
  for (int64_t j = 0; j < out; ++j) {
    const double x = SourceCoordinate(a, j, in, out, scale, roi_start, roi_end);
    if (a.transform == "tf_crop_and_resize" && (x < 0 || x > in - 1)) taps.outside[j] = 1;
    int64_t* index = &taps.index[j * taps.taps];
    double* weight = &taps.weight[j * taps.taps];
    if (taps.taps == 1) {
      index[0] = std::min<int64_t>(std::max<int64_t>(NearestIndex(a.nearest_mode, x), 0), in - 1);
      weight[0] = 1;
      continue;
    }
    const double low = std::floor(x);
    const double t = x - low;
    const int64_t first = static_cast<int64_t>(low) - (taps.taps == 4 ? 1 : 0);
    double total = 0;
    for (int k = 0; k < taps.taps; ++k) {
      const int64_t i = first + k;
      double w = taps.taps == 2 ? (k == 0 ? 1 - t : t) : CubicWeight(t - (k - 1), a.cubic_a);
      if (a.exclude_outside && (i < 0 || i >= in)) w = 0;
      index[k] = std::min<int64_t>(std::max<int64_t>(i, 0), in - 1);
      weight[k] = w;
      total += w;
    }
    if (a.exclude_outside && total != 0) {
      for (int k = 0; k < taps.taps; ++k) weight[k] /= total;
    }
  }
  return taps;
}

// Y [outer, out, inner] from X [outer, in, inner] along one axis.
template <typename T>
void ResizeAxis(const AxisTaps& taps, int64_t outer, int64_t in, int64_t out, int64_t inner,
                T extrapolation, const T* x, T* y) {
  ParallelFor(
      outer * out,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t o = row / out, j = row % out;
          T* dst = y + row * inner;
          if (taps.outside[j]) {
            std::fill(dst, dst + inner, extrapolation);
            continue;
          }
          const int64_t* index = &taps.index[j * taps.taps];
          const double* weight = &taps.weight[j * taps.taps];
          for (int64_t i = 0; i < inner; ++i) {
            double sum = 0;
            for (int k = 0; k < taps.taps; ++k) {
              sum += weight[k] * static_cast<double>(x[(o * in + index[k]) * inner + i]);
            }
            dst[i] = static_cast<T>(sum);
          }
        }
      },
      RowsPerThread(inner * taps.taps));
}

ResizeNdArgs ReadArgs(const OperatorBase& op) {
  ResizeNdArgs a;
  a.mode = op.GetSingleArgument<std::string>("mode", a.mode);
  a.transform = op.GetSingleArgument<std::string>("coordinate_transformation_mode", a.transform);
  a.nearest_mode = op.GetSingleArgument<std::string>("nearest_mode", a.nearest_mode);
  a.cubic_a = op.GetSingleArgument<float>("cubic_coeff_a", -0.75f);
  a.exclude_outside = op.GetSingleArgument<int64_t>("exclude_outside", 0) != 0;
  a.extrapolation = op.GetSingleArgument<float>("extrapolation_value", 0.0f);
  a.sizes = op.GetRepeatedArgument<int64_t>("sizes");
  a.scales = op.GetRepeatedArgument<float>("scales");
  a.roi = op.GetRepeatedArgument<float>("roi");
  const std::set<std::string> modes = {"nearest", "linear", "cubic"};
  const std::set<std::string> transforms = {"half_pixel",           "pytorch_half_pixel",
                                            "align_corners",        "asymmetric",
                                            "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  const std::set<std::string> nearest = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  DOPPIO_ENFORCE(modes.count(a.mode), "mode '", a.mode, "' is not nearest, linear or cubic");
  DOPPIO_ENFORCE(transforms.count(a.transform), "coordinate_transformation_mode '", a.transform,
                 "' is not one of ONNX's");
  DOPPIO_ENFORCE(nearest.count(a.nearest_mode), "nearest_mode '", a.nearest_mode,
                 "' is not one of ONNX's");
  for (int64_t d : a.sizes) DOPPIO_ENFORCE(d >= 0, "sizes ", a.sizes, " has a negative dim");
  for (float s : a.scales) {
    DOPPIO_ENFORCE(std::isfinite(s) && s > 0, "scales ", a.scales, " must be positive");
  }
  return a;
}

}  // namespace

ResizeNdOp::ResizeNdOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadArgs(*this)) {}

void ResizeNdOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const int rank = X.ndim();
  DOPPIO_ENFORCE(static_cast<int>(args_.sizes.size()) == rank, "sizes ", args_.sizes,
                 " must give one dim per dim of X '", input_name(0), "' ", X.dims());
  DOPPIO_ENFORCE(args_.scales.empty() || static_cast<int>(args_.scales.size()) == rank, "scales ",
                 args_.scales, " must give one value per dim of X ", X.dims());
  DOPPIO_ENFORCE(args_.roi.empty() || static_cast<int>(args_.roi.size()) == 2 * rank, "roi ",
                 args_.roi, " must give a start and an end per dim of X ", X.dims());
  const int64_t out_numel = CheckedNumElements(args_.sizes);
  EnforceTensorBytesLimit(out_numel, X.dtype(), "the output of '" + output_name(0) + "'");
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<int64_t> dims = X.dims();
    std::vector<T> current(X.data<T>(), X.data<T>() + X.numel()), next;
    for (int axis = rank - 1; axis >= 0; --axis) {
      const int64_t in = dims[axis], out = args_.sizes[axis];
      const double scale = args_.scales.empty() || in == 0
                               ? static_cast<double>(out) / std::max<int64_t>(in, 1)
                               : args_.scales[axis];
      const double roi_start = args_.roi.empty() ? 0.0 : args_.roi[axis];
      const double roi_end = args_.roi.empty() ? 1.0 : args_.roi[rank + axis];
      const bool identity = in == out && scale == 1.0 && args_.transform != "tf_crop_and_resize" &&
                            args_.transform != "align_corners";
      if (identity) continue;
      DOPPIO_ENFORCE(in > 0 || out == 0, "cannot resize dim ", axis, " of X ", X.dims(),
                     " from 0 to ", out);
      const AxisTaps taps = TapsFor(args_, in, out, scale, roi_start, roi_end);
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < axis; ++d) outer *= dims[d];
      for (int d = axis + 1; d < rank; ++d) inner *= dims[d];
      next.assign(outer * out * inner, T(0));
      if (in > 0) {
        ResizeAxis<T>(taps, outer, in, out, inner, static_cast<T>(args_.extrapolation),
                      current.data(), next.data());
      }
      current.swap(next);
      dims[axis] = out;
    }
    Tensor* Y = Output(0);
    Y->Resize(args_.sizes);
    std::copy(current.begin(), current.end(), Y->template mutable_data<T>());
  });
}

REGISTER_CPU_OPERATOR(Resize, ResizeNdOp);

OPERATOR_SCHEMA(Resize)
    .NumInputs(1)
    .NumOutputs(1)
    .Arg("sizes", "(ints) the output dims, one per input dim", true)
    .Arg("scales", "(floats) per-axis scale of the coordinate transform; default sizes / dims")
    .Arg("mode", "(string, default nearest) nearest, linear or cubic")
    .Arg("coordinate_transformation_mode",
         "(string, default half_pixel) half_pixel, pytorch_half_pixel, align_corners, "
         "asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize")
    .Arg("nearest_mode",
         "(string, default round_prefer_floor) also round_prefer_ceil, floor, "
         "ceil")
    .Arg("cubic_coeff_a", "(float, default -0.75) the cubic kernel's a")
    .Arg("exclude_outside", "(int, default 0) 1: samples beyond the edges weigh 0")
    .Arg("extrapolation_value", "(float, default 0) tf_crop_and_resize's value outside")
    .Arg("roi", "(floats) [starts..., ends...], normalized, for tf_crop_and_resize")
    .Input(0, "X", "float32 or float64 tensor")
    .Output(0, "Y", "X resized to `sizes`")
    .Doc(
        "ONNX's Resize: nearest, linear or cubic interpolation along every axis whose size "
        "or coordinate mapping changes.");

SHOULD_NOT_DO_GRADIENT(Resize, "imported models run for inference; ResizeNearest has one");

}  // namespace doppio
