// The math of elementwise ops, losses and random fills, written once as
// functors that compile for the host (g++) and for the device (nvcc). The
// CPU ops call them through plain loops (or their existing broadcast walk),
// the CUDA ops through the grid-stride launchers in elementwise_op_gpu.cu, so
// the CPU build -- and every CPU CI run -- executes the very expressions the
// GPU runs.
//
// Plain C++ only: no core headers, so nvcc can include this without the
// generated proto header.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#ifdef __CUDACC__
#define DOPPIO_HOST_DEVICE __host__ __device__
#else
#define DOPPIO_HOST_DEVICE
#endif

namespace doppio {
namespace functors {

// ---- unary activations: y = f(x) ----

struct Relu {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return x > T(0) ? x : T(0);
  }
};

struct Sigmoid {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    // exp of a non-positive number only, so large |x| cannot overflow.
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
};

struct Tanh {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return std::tanh(x);
  }
};

struct Exp {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return std::exp(x);
  }
};

// Negative inputs give nan and 0 gives -inf, as numpy.
struct Log {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return std::log(x);
  }
};

struct Sqrt {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return std::sqrt(x);
  }
};

struct Sqr {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return x * x;
  }
};

// Floats only: integer negation needs the wrapping form of the CPU op.
struct Neg {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return -x;
  }
};

// ---- activation gradients: dx from the forward output y and dy ----

struct ReluGradient {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T y, T dy) const {
    return y > T(0) ? dy : T(0);
  }
};

struct SigmoidGradient {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T y, T dy) const {
    return dy * y * (T(1) - y);
  }
};

struct TanhGradient {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T y, T dy) const {
    return dy * (T(1) - y * y);
  }
};

// ---- binary arithmetic: c = f(a, b) ----

struct Add {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};

struct Sub {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(a - b);
  }
};

struct Mul {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};

// Integer callers must rule out b == 0 first; the lowest integer over -1
// wraps as numpy does instead of trapping.
struct Div {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
      using Unsigned = std::make_unsigned_t<T>;
      if (b == T(-1)) return static_cast<T>(Unsigned(0) - static_cast<Unsigned>(a));
    }
    return static_cast<T>(a / b);
  }
};

// ---- losses ----

// Probabilities below this are clamped before the log, as in Caffe2.
constexpr double kLogThreshold = 1e-20;

template <typename T>
DOPPIO_HOST_DEVICE T ClampProbability(T p) {
  return p < T(kLogThreshold) ? T(kLogThreshold) : p;
}

// One row of LabelCrossEntropy: -log(max(p_label, 1e-20)).
struct LabelCrossEntropy {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T p_label) const {
    return -std::log(ClampProbability(p_label));
  }
};

// dX at the label of one row: -dy / max(p_label, 1e-20).
struct LabelCrossEntropyGradient {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T p_label, T dy) const {
    return -dy / ClampProbability(p_label);
  }
};

// Softmax of one row of logits into prob[0..d) and its cross entropy against
// `label` (its weight folded in by the caller): -log(max(prob[label], 1e-20)).
template <typename T>
DOPPIO_HOST_DEVICE T SoftmaxCrossEntropyRow(const T* logits, int64_t d, int64_t label, T* prob) {
  T max_logit = logits[0];
  for (int64_t j = 1; j < d; ++j) max_logit = logits[j] > max_logit ? logits[j] : max_logit;
  T sum = T(0);
  for (int64_t j = 0; j < d; ++j) {
    prob[j] = std::exp(logits[j] - max_logit);
    sum += prob[j];
  }
  for (int64_t j = 0; j < d; ++j) prob[j] /= sum;
  return LabelCrossEntropy{}(prob[label]);
}

// The logits' gradient of one row: (prob - onehot(label)) * scale.
template <typename T>
DOPPIO_HOST_DEVICE void SoftmaxCrossEntropyRowGradient(const T* prob, int64_t d, int64_t label,
                                                       T scale, T* dlogits) {
  for (int64_t j = 0; j < d; ++j) {
    dlogits[j] = (prob[j] - (j == label ? T(1) : T(0))) * scale;
  }
}

// Accuracy for one row: whether `label` ranks among the top_k scores, a tie
// going to the lower index (a stable sort's order), as Caffe2.
template <typename T>
DOPPIO_HOST_DEVICE bool LabelInTopK(const T* row, int64_t classes, int64_t label, int64_t top_k) {
  int64_t rank = 1;
  for (int64_t c = 0; c < classes && rank <= top_k; ++c) {
    if (row[c] > row[label] || (row[c] == row[label] && c < label)) ++rank;
  }
  return rank <= top_k;
}

// ---- optimizer steps (computed in double on both devices) ----

// Caffe2's momentum SGD for one element: m' = lr*g + mu*m and step m'
// (nesterov: step = (1 + mu)*m' - mu*m); the caller applies param -= step.
DOPPIO_HOST_DEVICE inline void MomentumSgdStep(double grad, double moment, double lr,
                                               double momentum, bool nesterov, double* new_moment,
                                               double* step) {
  if (nesterov) {
    *new_moment = momentum * moment + lr * grad;
    *step = (1 + momentum) * *new_moment - momentum * moment;
  } else {
    *new_moment = lr * grad + momentum * moment;
    *step = *new_moment;
  }
}

// Caffe2's dense Adam for one element; `correction` is
// sqrt(1 - beta2^t) / (1 - beta1^t), computed once on the host.
struct AdamStep {
  double beta1, beta2, epsilon, correction;
  // Returns the step; the new parameter is param + lr * step.
  DOPPIO_HOST_DEVICE double operator()(double grad, double moment_1, double moment_2,
                                       double* new_moment_1, double* new_moment_2) const {
    *new_moment_1 = beta1 * moment_1 + (1.0 - beta1) * grad;
    *new_moment_2 = beta2 * moment_2 + (1.0 - beta2) * grad * grad;
    return correction * *new_moment_1 / (std::sqrt(*new_moment_2) + epsilon);
  }
};

// ---- broadcasting: output index -> (A offset, B offset) ----

// Both tensors' offsets for an output element, from the output's dims and
// each input's strides (0 along broadcast dims). A plain struct of fixed
// arrays so it can be passed to a kernel by value.
struct BroadcastIndexMapper {
  static constexpr int kMaxDims = 8;
  int ndim = 0;
  int64_t out_dims[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};

  DOPPIO_HOST_DEVICE void Map(int64_t index, int64_t* a_offset, int64_t* b_offset) const {
    int64_t ia = 0, ib = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = index % out_dims[d];
      index /= out_dims[d];
      ia += i * a_strides[d];
      ib += i * b_strides[d];
    }
    *a_offset = ia;
    *b_offset = ib;
  }
};

// The mapper for a, b and out of equal rank (1 where broadcast), as in a
// BroadcastPlan. Returns false when the rank exceeds kMaxDims.
inline bool MakeBroadcastIndexMapper(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                     const std::vector<int64_t>& out,
                                     BroadcastIndexMapper* mapper) {
  const int ndim = static_cast<int>(out.size());
  if (ndim > BroadcastIndexMapper::kMaxDims || a.size() != out.size() ||
      b.size() != out.size()) {
    return false;
  }
  mapper->ndim = ndim;
  int64_t a_stride = 1, b_stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    mapper->out_dims[d] = out[d];
    mapper->a_strides[d] = (a[d] == 1 && out[d] != 1) ? 0 : a_stride;
    mapper->b_strides[d] = (b[d] == 1 && out[d] != 1) ? 0 : b_stride;
    a_stride *= a[d];
    b_stride *= b[d];
  }
  return true;
}

// ---- Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as
// 1, 2, 3", SC11): a counter-based generator, so element i of a fill draws
// from counter i independently of every other element and of the launch
// geometry: CPU and any GPU produce the same numbers for one seed. ----

struct Philox4x32 {
  uint32_t v[4];
};

DOPPIO_HOST_DEVICE inline void PhiloxMulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

DOPPIO_HOST_DEVICE inline Philox4x32 Philox4x32_10(Philox4x32 counter, uint32_t key0,
                                                   uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    PhiloxMulHiLo(kMul0, counter.v[0], &hi0, &lo0);
    PhiloxMulHiLo(kMul1, counter.v[2], &hi1, &lo1);
    counter = Philox4x32{{hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

// A per-op random stream: `seed` is the key, `offset` separates the op's
// successive runs, and element i of a run reads counter (i, offset).
struct PhiloxStream {
  uint64_t seed = 0;
  uint64_t offset = 0;

  DOPPIO_HOST_DEVICE Philox4x32 Block(uint64_t element) const {
    const Philox4x32 counter{{static_cast<uint32_t>(element),
                              static_cast<uint32_t>(element >> 32),
                              static_cast<uint32_t>(offset),
                              static_cast<uint32_t>(offset >> 32)}};
    return Philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  }
};

// [0, 1) with 24 random bits, exactly representable in float.
DOPPIO_HOST_DEVICE inline float UnitFloat(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}
// (0, 1]: safe under a log.
DOPPIO_HOST_DEVICE inline float UnitFloatNonZero(uint32_t bits) {
  return static_cast<float>((bits >> 8) + 1u) * (1.0f / 16777216.0f);
}

// Uniform on [min, max) at element i.
struct UniformFill {
  PhiloxStream stream;
  float min, max;
  DOPPIO_HOST_DEVICE float operator()(int64_t i) const {
    return min + (max - min) * UnitFloat(stream.Block(static_cast<uint64_t>(i)).v[0]);
  }
};

// Normal(mean, std) at element i by Box-Muller on the block's first two words.
struct GaussianFill {
  PhiloxStream stream;
  float mean, std;
  DOPPIO_HOST_DEVICE float operator()(int64_t i) const {
    const Philox4x32 block = stream.Block(static_cast<uint64_t>(i));
    const float radius = std::sqrt(-2.0f * std::log(UnitFloatNonZero(block.v[0])));
    const float angle = 6.283185307179586f * UnitFloat(block.v[1]);
    return mean + std * radius * std::cos(angle);
  }
};

// Dropout's keep mask at element i: kept with probability 1 - ratio.
struct DropoutKeep {
  PhiloxStream stream;
  float ratio;
  DOPPIO_HOST_DEVICE bool operator()(int64_t i) const {
    return UnitFloat(stream.Block(static_cast<uint64_t>(i)).v[0]) >= ratio;
  }
};

// ---- CPU launchers: the host instantiation of the same functors ----

template <typename F, typename T>
void CpuUnary(const F& f, int64_t n, const T* x, T* y) {
  // Pointwise: vectorizing cannot change a result. (The CUDA files include
  // this header without OpenMP.)
#if defined(_OPENMP)
#pragma omp simd
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <typename F, typename T>
void CpuUnaryGradient(const F& f, int64_t n, const T* y, const T* dy, T* dx) {
#if defined(_OPENMP)
#pragma omp simd
#endif
  for (int64_t i = 0; i < n; ++i) dx[i] = f(y[i], dy[i]);
}

// c[i] = f(a[ia], b[ib]) through the mapper: the reference walk the CUDA
// launcher shares (the CPU ops use a faster odometer walk, tested equal).
template <typename F, typename T>
void CpuBinaryMapped(const F& f, const BroadcastIndexMapper& mapper, int64_t n, const T* a,
                     const T* b, T* c) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t ia, ib;
    mapper.Map(i, &ia, &ib);
    c[i] = f(a[ia], b[ib]);
  }
}

template <typename F, typename T>
void CpuGenerate(const F& f, int64_t n, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(f(i));
}

}  // namespace functors
}  // namespace doppio
