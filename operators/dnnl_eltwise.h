// Pointwise float32 functions on oneDNN's JIT eltwise kernels: vectorized
// (AVX2, AVX-512) and spread over the calling thread's intra-op threads,
// where our own loops call libm per element (Sigmoid's exp alone was 56% of
// EfficientNet-B0's inference). The same description names the post-op a
// fused ConvFusion applies (conv_op_dnnl), so an activation computes the
// same function standalone and fused.
//
// Thread-safety: each thread keeps its own primitives; any thread may call.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace dnnl {
struct post_ops;
}  // namespace dnnl

namespace doppio {

// oneDNN's eltwise algorithms we use, with its alpha/beta conventions:
//   kRelu: x > 0 ? x : alpha * x      kLogistic: 1 / (1 + e^-x)
//   kTanh, kExp                       kElu: x > 0 ? x : alpha * (e^x - 1)
//   kClip: min(max(x, alpha), beta)   kSwish: x / (1 + e^(-alpha x))
//   kGeluErf: 0.5 x (1 + erf(x / sqrt 2))
//   kGeluTanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//   kHardSwish: x * min(max(x + 3, 0), 6) / 6 (oneDNN 2.6 has no alpha/beta)
enum class EltwiseAlgorithm {
  kNone,
  kRelu,
  kLogistic,
  kTanh,
  kExp,
  kElu,
  kClip,
  kSwish,
  kGeluErf,
  kGeluTanh,
  kHardSwish
};

struct EltwiseFn {
  EltwiseAlgorithm algorithm = EltwiseAlgorithm::kNone;
  float alpha = 0.f;
  float beta = 0.f;
  bool empty() const { return algorithm == EltwiseAlgorithm::kNone; }
  bool operator==(const EltwiseFn& other) const {
    return algorithm == other.algorithm && alpha == other.alpha && beta == other.beta;
  }
};

// Below this many elements the call overhead (~2 us) outweighs the gain.
constexpr int64_t kDnnlEltwiseMinElements = 4096;

// y = f(x) over n floats; y may equal x (in place). Returns false, having
// written nothing, when oneDNN has no kernel for it (the caller computes it
// itself); errors of oneDNN itself also return false.
bool DnnlEltwiseForward(const EltwiseFn& fn, int64_t n, const float* x, float* y);

// Appends f to a primitive's post-ops (a fused ConvFusion's activation);
// false, appending nothing, when f is empty.
bool AppendDnnlPostOp(const EltwiseFn& fn, dnnl::post_ops* post_ops);

// The function of an activation op fused into ConvFusion: the op's type and
// its arguments as ConvFusion carries them, prefixed "activation_" (Relu;
// LeakyRelu alpha 0.01; Clip min, max; Sigmoid; Tanh; Elu alpha 1; Swish;
// HardSwish).
// An empty fn for a type oneDNN does not fuse. `arg(name, default)` reads
// one prefixed argument.
template <typename ReadArg>
EltwiseFn EltwiseOfActivation(const std::string& type, ReadArg&& arg) {
  if (type == "Relu") return {EltwiseAlgorithm::kRelu};
  if (type == "LeakyRelu") return {EltwiseAlgorithm::kRelu, arg("alpha", 0.01f)};
  if (type == "Clip") {
    return {EltwiseAlgorithm::kClip, arg("min", std::numeric_limits<float>::lowest()),
            arg("max", std::numeric_limits<float>::max())};
  }
  if (type == "Sigmoid") return {EltwiseAlgorithm::kLogistic};
  if (type == "Tanh") return {EltwiseAlgorithm::kTanh};
  if (type == "Elu") return {EltwiseAlgorithm::kElu, arg("alpha", 1.0f)};
  if (type == "Swish") return {EltwiseAlgorithm::kSwish, 1.0f};
  if (type == "HardSwish") return {EltwiseAlgorithm::kHardSwish};
  return {};
}

// f as our scalar code computes it, for fallbacks (fused ops whose oneDNN
// primitive is missing) and tests: the same formulas as the ops'.
float EltwiseReference(const EltwiseFn& fn, float x);

// "Relu", "Clip(0, 6)": for logs and errors.
std::string EltwiseName(const EltwiseFn& fn);

// Functors of the elementwise op templates that oneDNN can compute say so
// with `EltwiseFn Dnnl() const`; TryDnnlEltwise runs them there when the
// tensor is float32 and large enough, and returns false otherwise.
template <class F, class = void>
struct HasDnnlEltwise : std::false_type {};
template <class F>
struct HasDnnlEltwise<F, std::void_t<decltype(std::declval<const F&>().Dnnl())>> : std::true_type {
};

template <class Functor, typename T>
bool TryDnnlEltwise(const Functor& functor, int64_t n, const T* x, T* y) {
  if constexpr (std::is_same<T, float>::value && HasDnnlEltwise<Functor>::value) {
    return n >= kDnnlEltwiseMinElements && DnnlEltwiseForward(functor.Dnnl(), n, x, y);
  }
  return false;
}

}  // namespace doppio
