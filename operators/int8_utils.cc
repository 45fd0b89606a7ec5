#include "operators/int8_utils.h"

#include <algorithm>
#include <vector>

#include "operators/parallel_for.h"

namespace doppio {
namespace int8 {
namespace {

Quantization CheckedQuantization(float scale, int64_t zero_point) {
  DOPPIO_ENFORCE(std::isfinite(scale) && scale > 0, "Y_scale ", scale,
                 " must be finite and positive");
  DOPPIO_ENFORCE(zero_point >= 0 && zero_point <= 255, "Y_zero_point ", zero_point,
                 " is outside uint8's [0, 255]");
  return {scale, static_cast<int32_t>(zero_point)};
}

}  // namespace

Quantization OutputQuantization(const OperatorBase& op) {
  return CheckedQuantization(op.GetSingleArgument<float>("Y_scale", 1.0f),
                             op.GetSingleArgument<int64_t>("Y_zero_point", 0));
}

Quantization OutputQuantizationOr(const OperatorBase& op, const Quantization& input) {
  if (!op.HasArgument("Y_scale") && !op.HasArgument("Y_zero_point")) return input;
  return CheckedQuantization(op.GetSingleArgument<float>("Y_scale", input.scale),
                             op.GetSingleArgument<int64_t>("Y_zero_point", input.zero_point));
}

const Int8TensorCPU& Int8Input(const OperatorBase& op, int i, DataType dtype) {
  const Int8TensorCPU& x = op.InputAs<Int8TensorCPU>(i);
  DOPPIO_ENFORCE(x.t.dtype() == dtype, "input ", i, " ('", op.input_name(i), "') holds ",
                 DataTypeName(x.t.dtype()), " Int8 data, not ", DataTypeName(dtype));
  DOPPIO_ENFORCE(std::isfinite(x.scale) && x.scale > 0, "input ", i, " ('", op.input_name(i),
                 "') has scale ", x.scale, "; it must be finite and positive");
  // The kernels pad and clamp with it as a uint8 value.
  DOPPIO_ENFORCE(dtype != DataType::kUint8 || (x.zero_point >= 0 && x.zero_point <= 255), "input ",
                 i, " ('", op.input_name(i), "') has zero point ", x.zero_point,
                 ", outside uint8's [0, 255]");
  return x;
}

Int8TensorCPU* Int8Output(OperatorBase* op, int i, const Quantization& q,
                          const std::vector<int64_t>& dims) {
  Int8TensorCPU* y = op->OutputAs<Int8TensorCPU>(i);
  y->scale = q.scale;
  y->zero_point = q.zero_point;
  y->t.Resize(dims);
  y->t.mutable_data<uint8_t>();
  return y;
}

Limits ActivationLimits(const Quantization& q, bool relu) {
  if (!relu) return {};
  return {QuantizeReal(0.0, q), 255};
}

std::array<uint8_t, 256> RequantizeTable(const Quantization& from, const Quantization& to,
                                         const Limits& limits) {
  std::array<uint8_t, 256> table;
  for (int v = 0; v < 256; ++v) {
    table[v] = QuantizeReal(static_cast<double>(from.scale) * (v - from.zero_point), to, limits);
  }
  return table;
}

void Requantize(const uint8_t* x, int64_t n, const Quantization& from, const Quantization& to,
                uint8_t* y) {
  if (from.scale == to.scale && from.zero_point == to.zero_point) {
    if (x != y) std::copy(x, x + n, y);
    return;
  }
  const std::array<uint8_t, 256> table = RequantizeTable(from, to);
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

void Dequantize(const uint8_t* x, int64_t n, const Quantization& q, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i] - q.zero_point) * q.scale;
}

void CenteredIntegers(const uint8_t* x, int64_t n, int32_t zero_point, float* y) {
  ParallelFor(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = static_cast<float>(x[i] - zero_point);
  });
}

namespace {

// One row, every parameter a local (the uint8 stores may alias anything, so
// values read through references would be reloaded each element), the
// clamps as min/max: the loop compiles branch-free.
template <typename Acc>
void RequantizeRow(const Acc* a, const int64_t* offset, int64_t n, double multiplier,
                   double zero_point, double lo, double hi, uint8_t* __restrict out) {
  constexpr double kMagic = 6755399441055744.0;  // RoundToEven's
  for (int64_t c = 0; c < n; ++c) {
    double v = static_cast<double>(a[c]);
    if (offset != nullptr) v += static_cast<double>(offset[c]);
    v = std::min(std::max(v * multiplier, -1024.0), 1024.0);
    v = ((v + kMagic) - kMagic) + zero_point;
    out[c] = static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(v, lo), hi)));
  }
}

}  // namespace

template <typename Acc>
void RequantizeAccumulators(const Acc* acc, int64_t rows, int64_t channels, const int64_t* offset,
                            double multiplier, const Quantization& y, const Limits& limits,
                            uint8_t* out) {
  const double zero_point = y.zero_point, lo = limits.lo, hi = limits.hi;
  ParallelFor(
      rows,
      [=](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          RequantizeRow(acc + r * channels, offset, channels, multiplier, zero_point, lo, hi,
                        out + r * channels);
        }
      },
      RowsPerThread(channels));
}

template void RequantizeAccumulators<float>(const float*, int64_t, int64_t, const int64_t*, double,
                                            const Quantization&, const Limits&, uint8_t*);
template void RequantizeAccumulators<int32_t>(const int32_t*, int64_t, int64_t, const int64_t*,
                                              double, const Quantization&, const Limits&, uint8_t*);

void OutputQuantizationArgs(OpSchema& schema) {
  schema.Arg("Y_scale", "(float, default 1) output quantization scale")
      .Arg("Y_zero_point", "(int, default 0) output quantization zero point, in [0, 255]");
}

}  // namespace int8
}  // namespace doppio
