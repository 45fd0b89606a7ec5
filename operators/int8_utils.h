// What Caffe2's Int8 ops share: reading Int8TensorCPU inputs, the output
// quantization every op takes as arguments (Y_scale, Y_zero_point) and
// rounding reals into uint8.
//
// Quantized values stand for reals: real = scale * (q - zero_point). Doppio
// computes each op on those reals (integer products accumulate exactly; see
// int8_conv_op.h) and rounds once, to the nearest step of the output
// quantization (ties to even, as Caffe2's Int8Quantize), then clamps to the
// activation's range. That is within one step of Caffe2's QNNPACK kernels,
// whose fixed-point requantization rounds the same reals.
//
// Thread-safety: pure functions and immutable values.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/operator.h"
#include "core/schema.h"
#include "core/tensor_int8.h"

namespace doppio {
namespace int8 {

// One tensor's quantization.
struct Quantization {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

inline Quantization QuantizationOf(const Int8TensorCPU& t) { return {t.scale, t.zero_point}; }

// The op's output quantization: Y_scale (default 1) and Y_zero_point
// (default 0), checked (a finite positive scale, a zero point in [0, 255]).
Quantization OutputQuantization(const OperatorBase& op);
// Like OutputQuantization, but where the def gives neither argument the
// input's quantization is kept (ops that move values without changing them:
// pools, Relu, ResizeNearest, shape ops). Caffe2 requires the arguments to
// equal the input's there; Doppio requantizes when they differ.
Quantization OutputQuantizationOr(const OperatorBase& op, const Quantization& input);

// Input i as an Int8TensorCPU holding uint8 data (`dtype` int32 for biases);
// a clear error naming the input otherwise.
const Int8TensorCPU& Int8Input(const OperatorBase& op, int i, DataType dtype = DataType::kUint8);
// Output i as an Int8TensorCPU with quantization `q` and shape `dims`.
// Callers read everything they need from their inputs first: the output may
// be an input's blob (in-place forms).
Int8TensorCPU* Int8Output(OperatorBase* op, int i, const Quantization& q,
                          const std::vector<int64_t>& dims);

// The uint8 range an activation leaves: [0, 255], or for a fused Relu
// [quantized 0, 255].
struct Limits {
  int32_t lo = 0;
  int32_t hi = 255;
};
Limits ActivationLimits(const Quantization& q, bool relu);

// v rounded to the nearest integer, ties to even, for |v| <= 2^50: adding
// and subtracting 1.5 x 2^52 leaves no fraction bits. Inline and branch-free
// where std::nearbyint is a library call (x86-64 without SSE4.1), so the
// requantization loops vectorize.
inline double RoundToEven(double v) {
  constexpr double kMagic = 6755399441055744.0;
  return (v + kMagic) - kMagic;
}

// v + zero point, rounded and clamped to `limits`, as uint8. Values far
// outside uint8's range are clamped before rounding (they saturate anyway).
inline uint8_t RoundClamp(double v, int32_t zero_point, const Limits& limits) {
  v = v < -1024.0 ? -1024.0 : (v > 1024.0 ? 1024.0 : v);
  v = RoundToEven(v) + zero_point;
  v = v < limits.lo ? limits.lo : (v > limits.hi ? limits.hi : v);
  return static_cast<uint8_t>(static_cast<int32_t>(v));
}

// real / scale rounded to the nearest integer (ties to even), plus the zero
// point, clamped to `limits`.
inline uint8_t QuantizeReal(double real, const Quantization& q, const Limits& limits = {}) {
  // NaN maps to the zero point (real 0).
  if (!(real == real)) return static_cast<uint8_t>(q.zero_point);
  return RoundClamp(real / q.scale, q.zero_point, limits);
}

// Each uint8 value of quantization `from` as a value of `to`, clamped to
// `limits`: 256 entries, every possible input once.
std::array<uint8_t, 256> RequantizeTable(const Quantization& from, const Quantization& to,
                                         const Limits& limits = {});

// Requantizes uint8 values of quantization `from` into `to` (a copy when
// they are equal).
void Requantize(const uint8_t* x, int64_t n, const Quantization& from, const Quantization& to,
                uint8_t* y);

// The reals of a uint8 tensor, float32: (q - zero_point) * scale in float,
// as Caffe2's Int8Dequantize computes them.
void Dequantize(const uint8_t* x, int64_t n, const Quantization& q, float* y);

// The integers of a uint8 tensor minus its zero point, as float32 (exact):
// what FloatTwin convolves and multiplies.
void CenteredIntegers(const uint8_t* x, int64_t n, int32_t zero_point, float* y);

// Y = clamp(round((acc + offset[c]) * multiplier) + zero point) for a
// rows x channels matrix of accumulators (float32 holding integers, or
// int32); `offset` (per channel: the bias, and any zero-point correction)
// may be null. multiplier = input scale x weight scale / output scale.
template <typename Acc>
void RequantizeAccumulators(const Acc* acc, int64_t rows, int64_t channels, const int64_t* offset,
                            double multiplier, const Quantization& y, const Limits& limits,
                            uint8_t* out);

// Why the Int8 ops have no gradient (SHOULD_NOT_DO_GRADIENT's reason).
constexpr const char* kInferenceOnly = "quantized ops are inference only (as in Caffe2)";

// The schema arguments every Int8 op with a quantized output documents.
void OutputQuantizationArgs(OpSchema& schema);

}  // namespace int8
}  // namespace doppio
