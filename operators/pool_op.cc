#include "operators/pool_op.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

namespace {

// "MaxPool2D" / "AveragePool3DGradient" -> 2 / 3; 0 for the plain names.
int SpatialDimsInName(std::string type) {
  const std::string suffix = "Gradient";
  if (type.size() > suffix.size() &&
      type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0) {
    type.resize(type.size() - suffix.size());
  }
  if (type.size() >= 2 && type.back() == 'D') {
    const char digit = type[type.size() - 2];
    if (digit >= '1' && digit <= '3') return digit - '0';
  }
  return 0;
}

struct Range {
  int64_t begin, end;
};

// Pooling geometry with 1-D and 2-D padded to 3-D by leading unit axes, so
// one loop nest serves every rank.
struct Pool3 {
  int64_t in[3], out[3], kernel[3], stride[3], pad[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

Pool3 ToPool3(const ConvPoolGeometry& g) {
  Pool3 s;
  const int lead = 3 - g.num_spatial();
  for (int axis = 0; axis < 3; ++axis) {
    const int k = axis - lead;
    s.in[axis] = k < 0 ? 1 : g.input[k];
    s.out[axis] = k < 0 ? 1 : g.output[k];
    s.kernel[axis] = k < 0 ? 1 : g.kernel[k];
    s.stride[axis] = k < 0 ? 1 : g.stride[k];
    s.pad[axis] = k < 0 ? 0 : g.pad_begin(k);
  }
  return s;
}

// Calls fn(output_index, d, h, w) with each window clipped to the input.
template <typename Fn>
void ForEachWindow(const Pool3& s, Fn&& fn) {
  auto clip = [&](int axis, int64_t o) {
    const int64_t start = o * s.stride[axis] - s.pad[axis];
    return Range{std::max<int64_t>(start, 0),
                 std::min<int64_t>(start + s.kernel[axis], s.in[axis])};
  };
  int64_t index = 0;
  for (int64_t od = 0; od < s.out[0]; ++od) {
    const Range d = clip(0, od);
    for (int64_t oh = 0; oh < s.out[1]; ++oh) {
      const Range h = clip(1, oh);
      for (int64_t ow = 0; ow < s.out[2]; ++ow) fn(index++, d, h, clip(2, ow));
    }
  }
}

// Calls fn(input_index) for each input position in a window.
template <typename Fn>
void ForEachInWindow(const Pool3& s, const Range& d, const Range& h, const Range& w,
                     Fn&& fn) {
  for (int64_t i = d.begin; i < d.end; ++i) {
    for (int64_t j = h.begin; j < h.end; ++j) {
      const int64_t row = (i * s.in[1] + j) * s.in[2];
      for (int64_t k = w.begin; k < w.end; ++k) fn(row + k);
    }
  }
}

// Planes (or NHWC images) of `plane_size` input values per intra-op
// thread at least: each plane is pooled by one thread, into its own part of
// the output (or, for the gradient, of dX), so any split gives the same bits.
int64_t PlanesPerThread(int64_t plane_size) { return RowsPerThread(plane_size); }

// The reference CNN's pooling: 2-D, 2x2 windows at stride 2, no padding,
// every window inside the input. Its planes take the loops below instead of
// ForEachWindow's clipped ranges and callbacks (~60% of the optimized
// batch-64 inference was MaxPool).
bool IsPlain2x2(const Pool3& s) {
  return s.in[0] == 1 && s.out[0] == 1 && s.kernel[0] == 1 && s.kernel[1] == 2 &&
         s.kernel[2] == 2 && s.stride[1] == 2 && s.stride[2] == 2 && s.pad[1] == 0 &&
         s.pad[2] == 0 && 2 * s.out[1] <= s.in[1] && 2 * s.out[2] <= s.in[2];
}

// Max of each 2x2 window, taken as the general loop takes it (std::max from
// lowest(), positions in row-major order), so NaNs come out the same.
template <typename T>
void MaxPoolPlane2x2(const Pool3& s, const T* xp, T* yp) {
  const int64_t width = s.in[2];
  for (int64_t oh = 0; oh < s.out[1]; ++oh) {
    const T* top = xp + 2 * oh * width;
    const T* bottom = top + width;
    T* row = yp + oh * s.out[2];
    for (int64_t ow = 0; ow < s.out[2]; ++ow) {
      T best = std::numeric_limits<T>::lowest();
      best = std::max(best, top[2 * ow]);
      best = std::max(best, top[2 * ow + 1]);
      best = std::max(best, bottom[2 * ow]);
      best = std::max(best, bottom[2 * ow + 1]);
      row[ow] = best;
    }
  }
}

// One window covering the whole plane, no padding: global pooling (SE
// blocks' squeeze, every classifier head).
bool IsWholePlane(const Pool3& s) {
  for (int axis = 0; axis < 3; ++axis) {
    if (s.out[axis] != 1 || s.kernel[axis] != s.in[axis] || s.pad[axis] != 0) return false;
  }
  return true;
}

// The mean of a contiguous plane, summed in vector lanes (a fixed order, so
// the same bits every run) rather than the window walk's callbacks.
template <typename T>
T PlaneMean(const T* xp, int64_t count) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < count; ++i) sum += xp[i];
  return count > 0 ? sum / static_cast<T>(count) : T(0);
}

// Any 2-D max pooling of one plane in two passes: per output row, the
// column-wise max over the window's rows (contiguous, vectorized), then each
// window's max along that row. 3x3 windows (ResNet's stem, GoogLeNet's and
// SqueezeNet's pools) cost 6 comparisons per output instead of 9 calls
// through ForEachWindow (which made MaxPool a third of GoogLeNet's
// inference). The max is exact, so the order of comparisons changes no bit;
// NaNs are skipped as the general loop skips them, and an all-padding window
// gives 0 as there.
template <typename T>
void MaxPoolPlane2D(const Pool3& s, const T* xp, T* yp) {
  const int64_t height = s.in[1], width = s.in[2];
  thread_local std::vector<T> column_max;
  column_max.resize(width);
  T* columns = column_max.data();
  for (int64_t oh = 0; oh < s.out[1]; ++oh) {
    const int64_t start_h = oh * s.stride[1] - s.pad[1];
    const int64_t h0 = std::max<int64_t>(start_h, 0);
    const int64_t h1 = std::min<int64_t>(start_h + s.kernel[1], height);
    T* row = yp + oh * s.out[2];
    if (h0 >= h1) {
      std::fill(row, row + s.out[2], T(0));
      continue;
    }
    std::fill(columns, columns + width, std::numeric_limits<T>::lowest());
    for (int64_t h = h0; h < h1; ++h) {
      const T* line = xp + h * width;
#pragma omp simd
      for (int64_t w = 0; w < width; ++w) columns[w] = std::max(columns[w], line[w]);
    }
    for (int64_t ow = 0; ow < s.out[2]; ++ow) {
      const int64_t start_w = ow * s.stride[2] - s.pad[2];
      const int64_t w0 = std::max<int64_t>(start_w, 0);
      const int64_t w1 = std::min<int64_t>(start_w + s.kernel[2], width);
      T best = std::numeric_limits<T>::lowest();
      for (int64_t w = w0; w < w1; ++w) best = std::max(best, columns[w]);
      row[ow] = w0 < w1 ? best : T(0);
    }
  }
}

// The gradient to the first position (row-major) equal to the window's max.
template <typename T>
void MaxPoolGradientPlane2x2(const Pool3& s, const T* xp, const T* yp, const T* dyp, T* dxp) {
  const int64_t width = s.in[2];
  for (int64_t oh = 0; oh < s.out[1]; ++oh) {
    const int64_t top = 2 * oh * width;
    for (int64_t ow = 0; ow < s.out[2]; ++ow) {
      const int64_t o = oh * s.out[2] + ow;
      const T max = yp[o];
      const int64_t candidates[4] = {top + 2 * ow, top + 2 * ow + 1, top + width + 2 * ow,
                                     top + width + 2 * ow + 1};
      for (int64_t i : candidates) {
        if (xp[i] == max) {
          dxp[i] += dyp[o];
          break;
        }
      }
    }
  }
}

// |x|^p, one term of LpPool's sum.
template <typename T>
T LpPower(T x, T p) {
  return std::pow(std::abs(x), p);
}

// d y / d x for y = (sum |x|^p)^(1/p): sign(x) |x|^(p-1) / y^(p-1); 0 where
// y is 0 (an all-zero window, where the norm has no derivative).
template <typename T>
T LpSlope(T x, T y, T p) {
  if (y == T(0)) return T(0);
  const T sign = x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
  return sign * std::pow(std::abs(x) / y, p - T(1));
}

int64_t WindowCount(const Range& d, const Range& h, const Range& w) {
  return (d.end - d.begin) * (h.end - h.begin) * (w.end - w.begin);
}

// The first input position of a window (in row-major order) whose value
// equals the window's maximum `top`, or -1 when none does (a NaN maximum).
// The max-pool gradient goes to that one position, as in PyTorch, cuDNN and
// oneDNN. Caffe2's CPU kernel instead gives the full gradient to every tied
// position, which multiplies it on flat regions (an image's uniform
// background ties after Conv + BN + Relu) and makes CPU and GPU disagree.
template <typename T>
int64_t FirstMaxInWindow(const Pool3& s, const Range& d, const Range& h, const Range& w,
                         const T* x, int64_t step, T top) {
  for (int64_t i = d.begin; i < d.end; ++i) {
    for (int64_t j = h.begin; j < h.end; ++j) {
      const int64_t row = (i * s.in[1] + j) * s.in[2];
      for (int64_t k = w.begin; k < w.end; ++k) {
        if (x[(row + k) * step] == top) return row + k;
      }
    }
  }
  return -1;
}

}  // namespace

// ---- PoolOpBase ----

bool ReadCountIncludePad(const OperatorBase& op) {
  return op.GetSingleArgument<bool>("count_include_pad", false);
}

PoolOpBase::PoolOpBase(const OperatorDef& def, Workspace* workspace)
    : ConvPoolOpBase(def, workspace),
      required_spatial_dims_(SpatialDimsInName(def.type())),
      count_include_pad_(ReadCountIncludePad(*this)),
      p_(GetSingleArgument<float>("p", 2.0f)) {
  DOPPIO_ENFORCE(p_ > 0, "argument p must be > 0, got ", p_);
}

ConvPoolGeometry PoolOpBase::PoolGeometry(const Tensor& X) const {
  if (required_spatial_dims_ > 0) {
    DOPPIO_ENFORCE(X.ndim() == required_spatial_dims_ + 2, "input '", input_name(0), "' has shape ",
                   X.dims(), "; ", type(), " needs ", required_spatial_dims_ + 2,
                   " dims (batch, channels and ", required_spatial_dims_, " spatial)");
  }
  const ConvPoolGeometry g = Geometry(X);
  if (conv_args().global_pooling()) return g;
  const int spatial = g.num_spatial();
  for (int64_t d : g.dilation) {
    DOPPIO_ENFORCE(d == 1, "pooling does not support dilation, got ", g.dilation);
  }
  const std::vector<int64_t> pads = conv_args().Pads(spatial, input_name(0));
  for (int axis = 0; axis < spatial; ++axis) {
    DOPPIO_ENFORCE(pads[axis] < g.kernel[axis] && pads[spatial + axis] < g.kernel[axis], "pads ",
                   pads, " must be smaller than the kernel ", g.kernel);
  }
  return g;
}

// ---- forward ----

template <PoolKind kKind>
void PoolOp<kKind>::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <PoolKind kKind>
template <typename T>
void PoolOp<kKind>::Run() {
  const Tensor& X = Input(0);
  const ConvPoolGeometry g = PoolGeometry(X);
  const Pool3 s = ToPool3(g);
  const int64_t N = g.batch, C = g.channels;
  const int64_t kernel_size = s.kernel[0] * s.kernel[1] * s.kernel[2];
  Tensor* Y = Output(0);
  Y->Resize(g.OutputDims(C));
  const T* x = X.data<T>();
  T* y = Y->mutable_data<T>();
  const bool include_pad = count_include_pad();
  const T p = static_cast<T>(this->p());
  auto divisor = [&](const Range& d, const Range& h, const Range& w) {
    return static_cast<T>(include_pad ? kernel_size : WindowCount(d, h, w));
  };
  const bool plain_2x2 = IsPlain2x2(s);
  if (g.order == StorageOrder::kNCHW) {
    ParallelFor(N * C, [&](int64_t first_plane, int64_t end_plane) {
      for (int64_t plane = first_plane; plane < end_plane; ++plane) {
        const T* xp = x + plane * s.in_size();
        T* yp = y + plane * s.out_size();
        if (kKind == PoolKind::kMax && plain_2x2) {
          MaxPoolPlane2x2(s, xp, yp);
          continue;
        }
        if (kKind == PoolKind::kMax && s.in[0] == 1 && s.kernel[0] == 1) {
          MaxPoolPlane2D(s, xp, yp);
          continue;
        }
        if (kKind == PoolKind::kAverage && IsWholePlane(s)) {
          yp[0] = PlaneMean(xp, s.in_size());
          continue;
        }
        ForEachWindow(s, [&](int64_t o, const Range& d, const Range& h, const Range& w) {
          if (kKind == PoolKind::kMax) {
            T best = std::numeric_limits<T>::lowest();
            ForEachInWindow(s, d, h, w, [&](int64_t i) { best = std::max(best, xp[i]); });
            yp[o] = WindowCount(d, h, w) > 0 ? best : T(0);
          } else if (kKind == PoolKind::kLp) {
            T sum = 0;
            ForEachInWindow(s, d, h, w, [&](int64_t i) { sum += LpPower(xp[i], p); });
            yp[o] = std::pow(sum, T(1) / p);
          } else {
            T sum = 0;
            ForEachInWindow(s, d, h, w, [&](int64_t i) { sum += xp[i]; });
            yp[o] = WindowCount(d, h, w) > 0 ? sum / divisor(d, h, w) : T(0);
          }
        });
      }
    }, PlanesPerThread(s.in_size()));
    return;
  }
  // NHWC: each window position contributes a contiguous vector of C values.
  ParallelFor(N, [&](int64_t first_image, int64_t end_image) {
    for (int64_t n = first_image; n < end_image; ++n) {
      const T* xn = x + n * s.in_size() * C;
      T* yn = y + n * s.out_size() * C;
      ForEachWindow(s, [&](int64_t o, const Range& d, const Range& h, const Range& w) {
        T* yo = yn + o * C;
        const bool empty = WindowCount(d, h, w) == 0;
        std::fill(yo, yo + C, kKind == PoolKind::kMax && !empty
                                  ? std::numeric_limits<T>::lowest()
                                  : T(0));
        ForEachInWindow(s, d, h, w, [&](int64_t i) {
          const T* xi = xn + i * C;
          if (kKind == PoolKind::kMax) {
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) yo[c] = std::max(yo[c], xi[c]);
          } else if (kKind == PoolKind::kLp) {
            for (int64_t c = 0; c < C; ++c) yo[c] += LpPower(xi[c], p);
          } else {
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) yo[c] += xi[c];
          }
        });
        if (kKind == PoolKind::kAverage && !empty) {
          const T scale = T(1) / divisor(d, h, w);
          for (int64_t c = 0; c < C; ++c) yo[c] *= scale;
        }
        if (kKind == PoolKind::kLp) {
          for (int64_t c = 0; c < C; ++c) yo[c] = std::pow(yo[c], T(1) / p);
        }
      });
    }
  }, PlanesPerThread(s.in_size() * C));
}

// ---- gradient ----

template <PoolKind kKind>
void PoolGradientOp<kKind>::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <PoolKind kKind>
template <typename T>
void PoolGradientOp<kKind>::Run() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const Tensor& dY = Input(2);
  const ConvPoolGeometry g = PoolGeometry(X);
  const Pool3 s = ToPool3(g);
  const int64_t N = g.batch, C = g.channels;
  const std::vector<int64_t> y_dims = g.OutputDims(C);
  for (int k = 1; k <= 2; ++k) {
    const Tensor& t = Input(k);
    DOPPIO_ENFORCE(t.dims() == y_dims && t.dtype() == X.dtype(), "'", input_name(k), "' is ",
                   t.DebugString(), " but pooling '", input_name(0), "' (", X.DebugString(),
                   ") gives ", DataTypeName(X.dtype()), y_dims);
  }
  const int64_t kernel_size = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const bool include_pad = count_include_pad();
  const T p = static_cast<T>(this->p());
  const T* x = X.data<T>();
  const T* y = Y.data<T>();
  const T* dy = dY.data<T>();
  Tensor* dX = Output(0);
  dX->Resize(X.dims());
  T* dx = dX->mutable_data<T>();
  // Each plane (NCHW) or image (NHWC) of dX is cleared and filled by the
  // thread that pools it.
  auto scale_of = [&](const Range& d, const Range& h, const Range& w) {
    const int64_t count = include_pad ? kernel_size : WindowCount(d, h, w);
    return count > 0 ? T(1) / static_cast<T>(count) : T(0);
  };
  const bool plain_2x2 = IsPlain2x2(s);
  if (g.order == StorageOrder::kNCHW) {
    ParallelFor(N * C, [&](int64_t first_plane, int64_t end_plane) {
      for (int64_t plane = first_plane; plane < end_plane; ++plane) {
        const T* xp = x + plane * s.in_size();
        T* dxp = dx + plane * s.in_size();
        std::fill(dxp, dxp + s.in_size(), T(0));
        const T* yp = y + plane * s.out_size();
        const T* dyp = dy + plane * s.out_size();
        if (kKind == PoolKind::kMax && plain_2x2) {
          MaxPoolGradientPlane2x2(s, xp, yp, dyp, dxp);
          continue;
        }
        ForEachWindow(s, [&](int64_t o, const Range& d, const Range& h, const Range& w) {
          if (kKind == PoolKind::kMax) {
            const int64_t first = FirstMaxInWindow(s, d, h, w, xp, 1, yp[o]);
            if (first >= 0) dxp[first] += dyp[o];
          } else if (kKind == PoolKind::kLp) {
            ForEachInWindow(s, d, h, w,
                            [&](int64_t i) { dxp[i] += LpSlope(xp[i], yp[o], p) * dyp[o]; });
          } else {
            const T share = dyp[o] * scale_of(d, h, w);
            ForEachInWindow(s, d, h, w, [&](int64_t i) { dxp[i] += share; });
          }
        });
      }
    }, PlanesPerThread(s.in_size()));
    return;
  }
  ParallelFor(N, [&](int64_t first_image, int64_t end_image) {
    for (int64_t n = first_image; n < end_image; ++n) {
      const T* xn = x + n * s.in_size() * C;
      T* dxn = dx + n * s.in_size() * C;
      std::fill(dxn, dxn + s.in_size() * C, T(0));
      const T* yn = y + n * s.out_size() * C;
      const T* dyn = dy + n * s.out_size() * C;
      ForEachWindow(s, [&](int64_t o, const Range& d, const Range& h, const Range& w) {
        const T* yo = yn + o * C;
        const T* dyo = dyn + o * C;
        if (kKind == PoolKind::kMax) {
          for (int64_t c = 0; c < C; ++c) {
            const int64_t first = FirstMaxInWindow(s, d, h, w, xn + c, C, yo[c]);
            if (first >= 0) dxn[first * C + c] += dyo[c];
          }
          return;
        }
        if (kKind == PoolKind::kLp) {
          ForEachInWindow(s, d, h, w, [&](int64_t i) {
            T* dxi = dxn + i * C;
            const T* xi = xn + i * C;
            for (int64_t c = 0; c < C; ++c) dxi[c] += LpSlope(xi[c], yo[c], p) * dyo[c];
          });
          return;
        }
        const T scale = scale_of(d, h, w);
        ForEachInWindow(s, d, h, w, [&](int64_t i) {
          T* dxi = dxn + i * C;
          for (int64_t c = 0; c < C; ++c) dxi[c] += dyo[c] * scale;
        });
      });
    }
  }, PlanesPerThread(s.in_size() * C));
}

// ---- registration ----

using MaxPoolOp = PoolOp<PoolKind::kMax>;
using AveragePoolOp = PoolOp<PoolKind::kAverage>;
using MaxPoolGradientOp = PoolGradientOp<PoolKind::kMax>;
using AveragePoolGradientOp = PoolGradientOp<PoolKind::kAverage>;
using LpPoolOp = PoolOp<PoolKind::kLp>;
using LpPoolGradientOp = PoolGradientOp<PoolKind::kLp>;

REGISTER_CPU_OPERATOR(AveragePool, AveragePoolOp);
REGISTER_CPU_OPERATOR(AveragePool1D, AveragePoolOp);
REGISTER_CPU_OPERATOR(AveragePool2D, AveragePoolOp);
REGISTER_CPU_OPERATOR(AveragePool3D, AveragePoolOp);
REGISTER_CPU_OPERATOR(MaxPool, MaxPoolOp);
REGISTER_CPU_OPERATOR(MaxPool1D, MaxPoolOp);
REGISTER_CPU_OPERATOR(MaxPool2D, MaxPoolOp);
REGISTER_CPU_OPERATOR(MaxPool3D, MaxPoolOp);
REGISTER_CPU_OPERATOR(AveragePoolGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool1DGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool2DGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool3DGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPoolGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool1DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool2DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool3DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(LpPool, LpPoolOp);
REGISTER_CPU_OPERATOR(LpPoolGradient, LpPoolGradientOp);

namespace {

void PoolArgs(OpSchema& schema) {
  schema.Arg("kernel", "(int) window size on every spatial axis; or kernels (one per "
                       "axis), or kernel_h and kernel_w")
      .Arg("stride", "(int, default 1) step on every axis; or strides, or stride_h/stride_w")
      .Arg("pad", "(int, default 0) padding on both sides of every axis; or pads (begins, "
                  "then ends), or pad_t/pad_l/pad_b/pad_r; each must be below the kernel")
      .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
      .Arg("legacy_pad", "(int, default 0) 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING")
      .Arg("global_pooling", "(bool, default 0) pool over the whole spatial extent");
}

// `what` is "the maximum" or "the average"; `dims` names the rank restriction.
std::function<void(OpSchema&)> ForwardSchema(const std::string& what,
                                             const std::string& dims) {
  return [what, dims](OpSchema& schema) {
    schema.NumInputs(1)
        .NumOutputs(1)
        .TensorInferenceFunction(ConvPoolShapeInference(/*channels_from_filter=*/false))
        .CostInferenceFunction(CostInferenceForPool)
        .Apply(PoolArgs)
        .Input(0, "X", "input " + dims + ", NCHW or NHWC (float32 or float64)")
        .Output(0, "Y", "pooled output: " + what + " of each window")
        .Doc("Takes " + what + " over sliding windows of the spatial dims of X " + dims +
             ".");
  };
}

void AverageArgs(OpSchema& schema) {
  schema.Arg("count_include_pad", "(bool, default 0) 1: divide by the whole kernel size, "
                                  "padding included; 0: by the input elements in the window");
}

void GradientSchema(OpSchema& schema) {
  schema.NumInputs(3)
      .CostInferenceFunction(CostInferenceForPoolGradient)
      .NumOutputs(1)
      .IdenticalTypeAndShape()
      .Apply(PoolArgs)
      .Input(0, "X", "the pooling op's input")
      .Input(1, "Y", "the pooling op's output")
      .Input(2, "dY", "gradient of Y")
      .Output(0, "dX", "gradient of X")
      .Doc("Gradient of a pooling op; takes the forward op's arguments.");
}

const char kAnyRank[] = "with 1 to 3 spatial dims";

}  // namespace

OPERATOR_SCHEMA(AveragePool).Apply(ForwardSchema("the average", kAnyRank)).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool1D).Apply(ForwardSchema("the average", "with 1 spatial dim"))
    .Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool2D).Apply(ForwardSchema("the average", "with 2 spatial dims"))
    .Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool3D).Apply(ForwardSchema("the average", "with 3 spatial dims"))
    .Apply(AverageArgs);
OPERATOR_SCHEMA(MaxPool).Apply(ForwardSchema("the maximum", kAnyRank));
OPERATOR_SCHEMA(MaxPool1D).Apply(ForwardSchema("the maximum", "with 1 spatial dim"));
OPERATOR_SCHEMA(MaxPool2D).Apply(ForwardSchema("the maximum", "with 2 spatial dims"));
OPERATOR_SCHEMA(MaxPool3D).Apply(ForwardSchema("the maximum", "with 3 spatial dims"));
OPERATOR_SCHEMA(AveragePoolGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool1DGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool2DGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool3DGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(MaxPoolGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(MaxPool1DGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(MaxPool2DGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(MaxPool3DGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(LpPool)
    .Apply(ForwardSchema("the p-norm (sum |x|^p)^(1/p)", kAnyRank))
    .Arg("p", "(float, default 2) the norm's order; > 0");
OPERATOR_SCHEMA(LpPoolGradient).Apply(GradientSchema).Arg("p", "(float) LpPool's p");

namespace {

// Every pooling op's gradient is "<type>Gradient" on (X, Y, dY).
class GetPoolGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), O(0), GO(0)}, {GI(0)},
                             Def().arg());
  }
};

constexpr char kSecondOrder[] = "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(AveragePool, GetPoolGradient);
REGISTER_GRADIENT(AveragePool1D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool2D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool3D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool, GetPoolGradient);
REGISTER_GRADIENT(MaxPool1D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool2D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool3D, GetPoolGradient);
REGISTER_GRADIENT(LpPool, GetPoolGradient);
SHOULD_NOT_DO_GRADIENT(AveragePoolGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AveragePool1DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AveragePool2DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AveragePool3DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPoolGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPool1DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPool2DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPool3DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(LpPoolGradient, kSecondOrder);

}  // namespace doppio
