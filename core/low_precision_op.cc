#include "core/low_precision_op.h"

#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/enforce.h"
#include "core/workspace.h"

namespace doppio {
namespace {

// Widening float16 by lookup where F16C is missing: the scalar conversion
// branches on every element, the table is 256 KiB and built once.
const float* HalfTable() {
  static const float* table = [] {
    auto* values = new float[1 << 16];
    for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
      values[bits] = HalfToFloat(float16{static_cast<uint16_t>(bits)});
    }
    return values;
  }();
  return table;
}

// The conversions are memory-bound loops over every activation of a
// low-precision op, twice per op: AVX2 (+F16C) versions where the CPU has
// them, picked at run time, and portable scalar ones (gcc's -O2 leaves these
// loops scalar).
#if defined(__GNUC__) && defined(__x86_64__)
#define DOPPIO_F16C 1
#else
#define DOPPIO_F16C 0
#endif

void WidenBFloat16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
    std::memcpy(dst + i, &bits, sizeof(bits));
  }
}

// Rounds to nearest even as FloatToBFloat16 (core/types.cc), NaN kept quiet,
// written so the compiler vectorizes it.
void NarrowBFloat16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, src + i, sizeof(bits));
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    dst[i] = static_cast<uint16_t>(nan ? ((bits >> 16) | 0x40u) : rounded);
  }
}

#if DOPPIO_F16C
bool HasAvx2F16C() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return has;
}

__attribute__((target("avx2,f16c"))) void WidenHalfF16C(const uint16_t* src, float* dst,
                                                        int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(half));
  }
  for (; i < n; ++i) dst[i] = HalfToFloat(float16{src[i]});
}

__attribute__((target("avx2,f16c"))) void NarrowHalfF16C(const float* src, uint16_t* dst,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), half);
  }
  for (; i < n; ++i) dst[i] = FloatToHalf(src[i]).bits;
}

__attribute__((target("avx2"))) void WidenBFloat16Avx2(const uint16_t* src, float* dst,
                                                       int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256i wide = _mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), wide);
  }
  WidenBFloat16(src + i, dst + i, n - i);
}

__attribute__((target("avx2"))) void NarrowBFloat16Avx2(const float* src, uint16_t* dst,
                                                        int64_t n) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i infinity = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, bias), lsb), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, abs_mask), infinity);
    const __m256i nan_value = _mm256_or_si256(_mm256_srli_epi32(bits, 16), quiet);
    const __m256i result = _mm256_blendv_epi8(rounded, nan_value, nan);
    // Every lane holds 16 bits: an unsigned pack is exact; the permute puts
    // the two 128-bit halves' results next to each other.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(result, result), 0xd8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
  }
  NarrowBFloat16(src + i, dst + i, n - i);
}
#endif

void WidenHalf(const uint16_t* src, float* dst, int64_t n) {
#if DOPPIO_F16C
  if (HasAvx2F16C()) return WidenHalfF16C(src, dst, n);
#endif
  const float* table = HalfTable();
  for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

void NarrowHalf(const float* src, uint16_t* dst, int64_t n) {
#if DOPPIO_F16C
  if (HasAvx2F16C()) return NarrowHalfF16C(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]).bits;
}

// Float32 scratch tensors for the widened copies, reused by the low-precision
// ops a thread runs one after another: allocating them afresh for every op
// cost page faults on every run (a tenth of a bfloat16 training step). A
// thread keeps at most kMaxScratch, so its scratch is a few activations.
class Scratch {
 public:
  static Tensor Take() {
    auto& pool = Pool();
    if (pool.empty()) return Tensor();
    Tensor tensor = std::move(pool.back());
    pool.pop_back();
    return tensor;
  }
  static void Give(Tensor* tensor) {
    auto& pool = Pool();
    if (tensor->has_storage() && pool.size() < kMaxScratch) pool.push_back(std::move(*tensor));
    tensor->Reset();
  }

 private:
  static constexpr size_t kMaxScratch = 8;
  static std::vector<Tensor>& Pool() {
    thread_local std::vector<Tensor> pool;
    return pool;
  }
};

}  // namespace

void WidenToFloat(const Tensor& in, Tensor* out) {
  DOPPIO_ENFORCE(IsLowPrecision(in.dtype()), "expected a float16 or bfloat16 tensor, got ",
                 DataTypeName(in.dtype()));
  out->Resize(in.dims());
  float* dst = out->mutable_data<float>();
  const int64_t n = in.numel();
  const auto* src = static_cast<const uint16_t*>(in.raw_data());
  if (in.dtype() == DataType::kBFloat16) {
#if DOPPIO_F16C
    if (HasAvx2F16C()) return WidenBFloat16Avx2(src, dst, n);
#endif
    WidenBFloat16(src, dst, n);
  } else {
    WidenHalf(src, dst, n);
  }
}

void NarrowFromFloat(const Tensor& in, DataType low, Tensor* out) {
  DOPPIO_ENFORCE(IsLowPrecision(low), "cannot narrow to ", DataTypeName(low));
  DOPPIO_ENFORCE(in.dtype() == DataType::kFloat, "expected a float32 tensor, got ",
                 DataTypeName(in.dtype()));
  out->Resize(in.dims());
  const float* src = in.data<float>();
  const int64_t n = in.numel();
  if (low == DataType::kBFloat16) {
    auto* dst = reinterpret_cast<uint16_t*>(out->mutable_data<bfloat16>());
#if DOPPIO_F16C
    if (HasAvx2F16C()) return NarrowBFloat16Avx2(src, dst, n);
#endif
    NarrowBFloat16(src, dst, n);
  } else {
    NarrowHalf(src, reinterpret_cast<uint16_t*>(out->mutable_data<float16>()), n);
  }
}

LowPrecisionOp::LowPrecisionOp(const OperatorDef& def, Workspace* workspace, Creator creator,
                               std::set<int> float32_outputs)
    : OperatorBase(def, workspace),
      creator_(std::move(creator)),
      float32_outputs_(std::move(float32_outputs)),
      direct_(creator_(def, workspace)) {}

LowPrecisionOp::~LowPrecisionOp() = default;

DataType LowPrecisionOp::LowInputType() const {
  DataType low = DataType::kFloat;
  for (int i = 0; i < InputSize(); ++i) {
    const Blob& blob = InputBlob(i);
    if (!blob.IsTensor() || !IsLowPrecision(blob.GetTensor().dtype())) continue;
    const DataType dtype = blob.GetTensor().dtype();
    DOPPIO_ENFORCE(low == DataType::kFloat || low == dtype, "inputs mix float16 and bfloat16 ('",
                   input_name(i), "' is ", DataTypeName(dtype), ")");
    low = dtype;
  }
  return low;
}

std::string LowPrecisionOp::RandomState() const {
  return ran_widened_ ? widened_->RandomState() : direct_->RandomState();
}

void LowPrecisionOp::SetRandomState(const std::string& state) {
  direct_->SetRandomState(state);
  if (widened_) widened_->SetRandomState(state);
  restored_state_ = state;
}

void LowPrecisionOp::Run() {
  const DataType low = LowInputType();
  ran_widened_ = low != DataType::kFloat;
  if (!ran_widened_) {
    direct_->Run();
    return;
  }
  RunWidened(low);
}

void LowPrecisionOp::RunWidened(DataType low) {
  if (!widened_) {
    shadow_ = std::make_unique<Workspace>();
    for (int i = 0; i < InputSize(); ++i) {
      shadow_inputs_.push_back(shadow_->CreateBlob(input_name(i)));
    }
    for (int j = 0; j < OutputSize(); ++j) {
      shadow_outputs_.push_back(shadow_->CreateBlob(output_name(j)));
    }
    widened_ = creator_(def(), shadow_.get());
    if (!restored_state_.empty()) widened_->SetRandomState(restored_state_);
  }
  // Each shadow blob is scratch (a widened input, an output of its own) or
  // an alias of a float32 input's storage.
  std::set<Blob*> scratch, aliases;
  for (int i = 0; i < InputSize(); ++i) {
    const Blob& real = InputBlob(i);
    DOPPIO_ENFORCE(real.IsTensor(), "input ", i, " ('", input_name(i),
                   "') should be a tensor but holds ", real.TypeName());
    Tensor* shadow = shadow_inputs_[i]->GetMutableTensor();
    if (IsLowPrecision(real.GetTensor().dtype())) {
      if (scratch.insert(shadow_inputs_[i]).second) *shadow = Scratch::Take();
      WidenToFloat(real.GetTensor(), shadow);
    } else {
      shadow->ShareData(real.GetTensor());
      aliases.insert(shadow_inputs_[i]);
    }
  }
  for (Blob* blob : shadow_outputs_) {
    if (!aliases.count(blob) && scratch.insert(blob).second) {
      *blob->GetMutableTensor() = Scratch::Take();
    }
  }
  widened_->Run();
  for (int j = 0; j < OutputSize(); ++j) {
    const Tensor& result = shadow_outputs_[j]->GetTensor();
    Tensor* real = OutputBlob(j)->GetMutableTensor();
    const bool in_place_over_float = aliases.count(shadow_outputs_[j]) > 0;
    if (result.dtype() != DataType::kFloat || in_place_over_float ||
        float32_outputs_.count(j)) {
      // Not narrowed: copied, unless it already is the real blob's storage
      // (in place over a shared float input).
      if (!real->SharesStorageWith(result) || real->dims() != result.dims()) {
        real->CopyFrom(result);
      }
    } else {
      NarrowFromFloat(result, low, real);
    }
  }
  // The float32 copies live only during the run: kept per op, they would
  // hold twice the memory the low-precision model saves.
  for (Blob* blob : scratch) Scratch::Give(blob->GetMutableTensor());
  for (Blob* blob : aliases) blob->GetMutableTensor()->Reset();
}

}  // namespace doppio
