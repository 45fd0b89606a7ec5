#include "operators/dnnl_eltwise.h"

#include <algorithm>
#include <cmath>
#include <dnnl.hpp>
#include <map>
#include <tuple>

#include "core/enforce.h"
#include "operators/dnnl_util.h"

namespace doppio {

namespace {

dnnl::algorithm ToDnnl(EltwiseAlgorithm algorithm) {
  switch (algorithm) {
    case EltwiseAlgorithm::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case EltwiseAlgorithm::kLogistic:
      return dnnl::algorithm::eltwise_logistic;
    case EltwiseAlgorithm::kTanh:
      return dnnl::algorithm::eltwise_tanh;
    case EltwiseAlgorithm::kExp:
      return dnnl::algorithm::eltwise_exp;
    case EltwiseAlgorithm::kElu:
      return dnnl::algorithm::eltwise_elu;
    case EltwiseAlgorithm::kClip:
      return dnnl::algorithm::eltwise_clip_v2;
    case EltwiseAlgorithm::kSwish:
      return dnnl::algorithm::eltwise_swish;
    case EltwiseAlgorithm::kGeluErf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case EltwiseAlgorithm::kGeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case EltwiseAlgorithm::kHardSwish:
      return dnnl::algorithm::eltwise_hardswish;
    case EltwiseAlgorithm::kNone:
      break;
  }
  return dnnl::algorithm::undef;
}

// A primitive per (function, size) on this thread. Nets run the same sizes
// every iteration, so the map stays small; it is dropped should a run of
// varying sizes grow it past kMaxCached.
struct CachedEltwise {
  dnnl::eltwise_forward primitive;
  dnnl::memory src, dst;
  bool supported = false;
};

constexpr size_t kMaxCached = 512;

CachedEltwise& Lookup(const EltwiseFn& fn, int64_t n) {
  thread_local std::map<std::tuple<int, float, float, int64_t>, CachedEltwise> cache;
  const auto key = std::make_tuple(static_cast<int>(fn.algorithm), fn.alpha, fn.beta, n);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  if (cache.size() >= kMaxCached) cache.clear();
  CachedEltwise& entry = cache[key];
  const dnnl::memory::desc desc({static_cast<dnnl::memory::dim>(n)}, dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::a);
  try {
    const dnnl::eltwise_forward::desc op(dnnl::prop_kind::forward_inference, ToDnnl(fn.algorithm),
                                         desc, fn.alpha, fn.beta);
    const dnnl::eltwise_forward::primitive_desc pd(op, UserScratchpadAttr(), DnnlCpuEngine());
    // Eltwise kernels need no scratchpad; one that did would need ours.
    if (pd.scratchpad_desc().get_size() != 0) return entry;
    entry.primitive = dnnl::eltwise_forward(pd);
    entry.src = dnnl::memory(desc, DnnlCpuEngine(), nullptr);
    entry.dst = dnnl::memory(desc, DnnlCpuEngine(), nullptr);
    entry.supported = true;
  } catch (const dnnl::error&) {
    // Left unsupported: the caller computes it.
  }
  return entry;
}

}  // namespace

bool DnnlEltwiseForward(const EltwiseFn& fn, int64_t n, const float* x, float* y) {
  if (fn.empty() || n <= 0) return n <= 0;
  CachedEltwise& entry = Lookup(fn, n);
  if (!entry.supported) return false;
  try {
    thread_local dnnl::stream stream(DnnlCpuEngine());
    entry.src.set_data_handle(const_cast<float*>(x));
    entry.dst.set_data_handle(y);
    entry.primitive.execute(stream, {{DNNL_ARG_SRC, entry.src}, {DNNL_ARG_DST, entry.dst}});
    stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

bool AppendDnnlPostOp(const EltwiseFn& fn, dnnl::post_ops* post_ops) {
  if (fn.empty()) return false;
  post_ops->append_eltwise(1.0f, ToDnnl(fn.algorithm), fn.alpha, fn.beta);
  return true;
}

float EltwiseReference(const EltwiseFn& fn, float x) {
  switch (fn.algorithm) {
    case EltwiseAlgorithm::kRelu:
      return x > 0.f ? x : fn.alpha * x;
    case EltwiseAlgorithm::kLogistic:
      return 1.f / (1.f + std::exp(-x));
    case EltwiseAlgorithm::kTanh:
      return std::tanh(x);
    case EltwiseAlgorithm::kExp:
      return std::exp(x);
    case EltwiseAlgorithm::kElu:
      return x > 0.f ? x : fn.alpha * std::expm1(x);
    case EltwiseAlgorithm::kClip:
      return x < fn.alpha ? fn.alpha : (x > fn.beta ? fn.beta : x);
    case EltwiseAlgorithm::kSwish:
      return x / (1.f + std::exp(-fn.alpha * x));
    case EltwiseAlgorithm::kGeluErf:
      return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case EltwiseAlgorithm::kGeluTanh:
      return 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case EltwiseAlgorithm::kHardSwish:
      return x * std::min(std::max(x + 3.f, 0.f), 6.f) / 6.f;
    case EltwiseAlgorithm::kNone:
      break;
  }
  return x;
}

std::string EltwiseName(const EltwiseFn& fn) {
  switch (fn.algorithm) {
    case EltwiseAlgorithm::kRelu:
      return fn.alpha == 0.f ? "Relu" : MakeString("LeakyRelu(", fn.alpha, ")");
    case EltwiseAlgorithm::kLogistic:
      return "Sigmoid";
    case EltwiseAlgorithm::kTanh:
      return "Tanh";
    case EltwiseAlgorithm::kExp:
      return "Exp";
    case EltwiseAlgorithm::kElu:
      return MakeString("Elu(", fn.alpha, ")");
    case EltwiseAlgorithm::kClip:
      return MakeString("Clip(", fn.alpha, ", ", fn.beta, ")");
    case EltwiseAlgorithm::kSwish:
      return "Swish";
    case EltwiseAlgorithm::kGeluErf:
      return "Gelu";
    case EltwiseAlgorithm::kGeluTanh:
      return "Gelu(tanh)";
    case EltwiseAlgorithm::kHardSwish:
      return "HardSwish";
    case EltwiseAlgorithm::kNone:
      break;
  }
  return "none";
}

}  // namespace doppio
