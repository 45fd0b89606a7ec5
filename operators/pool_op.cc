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
#include "operators/pool_window.h"

namespace doppio {

namespace {

using pool_window::FirstMaxInWindow;
using pool_window::ForEachInWindow;
using pool_window::ForEachWindow;
using pool_window::Pool3;
using pool_window::Range;
using pool_window::ToPool3;
using pool_window::WindowCount;

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

// Planes (or NHWC images) of `plane_size` input values per intra-op
// thread at least: each plane is pooled by one thread, into its own part of
// the output (or, for the gradient, of dX), so any split gives the same bits.
int64_t PlanesPerThread(int64_t plane_size) { return RowsPerThread(plane_size); }

// The reference CNN's pooling: 2-D, 2x2 windows at stride 2, no padding,
// every window inside the input. Its planes take the loops below instead of
// ForEachWindow's clipped ranges and callbacks (~60% of the optimized
// batch-64 inference was MaxPool).
bool IsPlain2x2(const Pool3& s) {
  return !s.dilated() && s.in[0] == 1 && s.out[0] == 1 && s.kernel[0] == 1 && s.kernel[1] == 2 &&
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
  if (s.dilated()) return false;
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
  // (Instantiated for MaxPool's integer types too, where it never runs.)
  if constexpr (std::is_unsigned<T>::value) {
    return static_cast<T>(std::pow(x, p));
  } else {
    return static_cast<T>(std::pow(std::abs(x), p));
  }
}

// d y / d x for y = (sum |x|^p)^(1/p): sign(x) |x|^(p-1) / y^(p-1); 0 where
// y is 0 (an all-zero window, where the norm has no derivative).
template <typename T>
T LpSlope(T x, T y, T p) {
  if (y == T(0)) return T(0);
  const T sign = x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
  return sign * std::pow(std::abs(x) / y, p - T(1));
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
  const std::vector<int64_t> pads = conv_args().Pads(spatial, input_name(0));
  for (int axis = 0; axis < spatial; ++axis) {
    const int64_t span = (g.kernel[axis] - 1) * g.dilation[axis] + 1;
    DOPPIO_ENFORCE(pads[axis] < span && pads[spatial + axis] < span, "pads ", pads,
                   " must be smaller than the (dilated) kernel ", g.kernel);
  }
  return g;
}

// ---- forward ----

template <PoolKind kKind>
void PoolOp<kKind>::RunOnDevice() {
  if constexpr (kKind == PoolKind::kMax) {
    // A maximum is exact in any type (ONNX's MaxPool takes uint8 and int8).
    DispatchInput(AllNumericTypes{}, *this, 0, Input(0).dtype(), [&](auto tag) {
      Run<typename decltype(tag)::type>();
      if (OutputSize() > 1) WriteIndices<typename decltype(tag)::type>();
    });
  } else {
    DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                  [&](auto tag) { Run<typename decltype(tag)::type>(); });
  }
}

// For each output, the flat index into X of the first input (row-major
// within its window) equal to it: the position within its (n, c) plane,
// row-major or (storage_order 1) column-major, plus the plane's offset, as
// ONNX Runtime numbers MaxPool's Indices; -1 where the window holds no number.
template <PoolKind kKind>
template <typename T>
void PoolOp<kKind>::WriteIndices() {
  const Tensor& X = Input(0);
  const ConvPoolGeometry g = PoolGeometry(X);
  DOPPIO_ENFORCE(g.order == StorageOrder::kNCHW, "the Indices output '", output_name(1),
                 "' needs order NCHW");
  const Pool3 s = ToPool3(g);
  const bool column_major = GetSingleArgument<int>("storage_order", 0) == 1;
  const T* x = X.data<T>();
  const T* y = Output(0)->template data<T>();
  Tensor* I = Output(1);
  I->Resize(g.OutputDims(g.channels));
  int64_t* indices = I->mutable_data<int64_t>();
  ParallelFor(
      g.batch * g.channels,
      [&](int64_t first_plane, int64_t end_plane) {
        for (int64_t plane = first_plane; plane < end_plane; ++plane) {
          const T* xp = x + plane * s.in_size();
          const T* yp = y + plane * s.out_size();
          int64_t* ip = indices + plane * s.out_size();
          ForEachWindow(s, [&](int64_t o, const Range& d, const Range& h, const Range& w) {
            int64_t at = FirstMaxInWindow(s, d, h, w, xp, 1, yp[o]);
            if (at >= 0 && column_major) {
              const int64_t i = at / (s.in[1] * s.in[2]), j = at / s.in[2] % s.in[1],
                            k = at % s.in[2];
              at = i + s.in[0] * (j + s.in[1] * k);
            }
            ip[o] = at < 0 ? -1 : plane * s.in_size() + at;
          });
        }
      },
      PlanesPerThread(s.in_size()));
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
        if (kKind == PoolKind::kMax && s.in[0] == 1 && s.kernel[0] == 1 && !s.dilated()) {
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

}  // namespace doppio
