// The bulk conversions of core/types.h: the scalar ones' results, n at a
// time, vectorized where the CPU allows.
#include <cstring>

#include "core/types.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

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
// F16C is read off CPUID (leaf 1, ECX bit 29) because clang's
// __builtin_cpu_supports does not know the name "f16c"; AVX2's check also
// covers the OS saving the YMM registers.
bool HasAvx2F16C() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool f16c = (ecx >> 29) & 1u;
    return f16c && __builtin_cpu_supports("avx2");
  }();
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

void WidenHalfBits(const uint16_t* src, float* dst, int64_t n) {
#if DOPPIO_F16C
  if (HasAvx2F16C()) return WidenHalfF16C(src, dst, n);
#endif
  const float* table = HalfTable();
  for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

void NarrowHalfBits(const float* src, uint16_t* dst, int64_t n) {
#if DOPPIO_F16C
  if (HasAvx2F16C()) return NarrowHalfF16C(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]).bits;
}

}  // namespace

void HalfToFloat(const float16* src, float* dst, int64_t n) {
  WidenHalfBits(reinterpret_cast<const uint16_t*>(src), dst, n);
}

void FloatToHalf(const float* src, float16* dst, int64_t n) {
  NarrowHalfBits(src, reinterpret_cast<uint16_t*>(dst), n);
}

void BFloat16ToFloat(const bfloat16* src, float* dst, int64_t n) {
  const auto* bits = reinterpret_cast<const uint16_t*>(src);
#if DOPPIO_F16C
  if (HasAvx2F16C()) return WidenBFloat16Avx2(bits, dst, n);
#endif
  WidenBFloat16(bits, dst, n);
}

void FloatToBFloat16(const float* src, bfloat16* dst, int64_t n) {
  auto* bits = reinterpret_cast<uint16_t*>(dst);
#if DOPPIO_F16C
  if (HasAvx2F16C()) return NarrowBFloat16Avx2(src, bits, n);
#endif
  NarrowBFloat16(src, bits, n);
}

}  // namespace doppio
