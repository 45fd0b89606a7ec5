#include "operators/winograd_kernels.h"

#include <algorithm>

namespace doppio {
namespace winograd {

// Lavin & Gray's F(4x4, 3x3) with points 0, +-1, +-2 and infinity:
//   B^T = [4  0 -5  0 1 0; 0 -4 -4  1 1 0; 0  4 -4 -1 1 0;
//          0 -2 -1  2 1 0; 0  2 -1 -2 1 0; 0  4  0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6;
//          1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// Each applies along one axis of a patch at a time, vectorized over
// channels: d[i] is the i-th row (or column) of channel vectors.

// The transforms are compiled twice, for AVX2 and for the baseline, and
// picked at load time; their row helpers inline into each. Not under
// ThreadSanitizer, whose instrumented ifunc resolvers crash while the
// library loads (as SpatialBN's clones).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define DOPPIO_WINOGRAD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DOPPIO_WINOGRAD_CLONES
#endif
#define DOPPIO_WINOGRAD_INLINE inline __attribute__((always_inline))

// r = B^T d for one column of 6 channel vectors of n floats; r's rows are
// `stride` floats apart.
DOPPIO_WINOGRAD_INLINE void InputRows(int64_t n, const float* const d[kPatch], float* r,
                                      int64_t stride) {
  const float *d0 = d[0], *d1 = d[1], *d2 = d[2], *d3 = d[3], *d4 = d[4], *d5 = d[5];
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    r[c] = 4 * d0[c] - 5 * d2[c] + d4[c];
    r[stride + c] = -4 * (d1[c] + d2[c]) + d3[c] + d4[c];
    r[2 * stride + c] = 4 * (d1[c] - d2[c]) - d3[c] + d4[c];
    r[3 * stride + c] = 2 * (d3[c] - d1[c]) - d2[c] + d4[c];
    r[4 * stride + c] = 2 * (d1[c] - d3[c]) - d2[c] + d4[c];
    r[5 * stride + c] = 4 * d1[c] - 5 * d3[c] + d5[c];
  }
}

// V[point][c] (points `stride` floats apart) = B^T d B of one tile, d's
// pixels given as pointers to C channels, null for padding.
DOPPIO_WINOGRAD_CLONES void TransformInputTile(int64_t C, const float* const pixels[kPoints],
                                               const float* zeros, float* v, int64_t stride) {
  alignas(64) float rows[kPatch][kPatch][kChannelBlock];  // [column][B^T row][channel]
  for (int64_t c0 = 0; c0 < C; c0 += kChannelBlock) {
    const int64_t n = std::min(kChannelBlock, C - c0);
    for (int j = 0; j < kPatch; ++j) {  // each column: B^T d
      const float* d[kPatch];
      for (int i = 0; i < kPatch; ++i) {
        const float* pixel = pixels[i * kPatch + j];
        d[i] = pixel != nullptr ? pixel + c0 : zeros;
      }
      InputRows(n, d, rows[j][0], kChannelBlock);
    }
    for (int i = 0; i < kPatch; ++i) {  // each row of B^T d: (B^T d) B
      const float* d[kPatch];
      for (int j = 0; j < kPatch; ++j) d[j] = rows[j][i];
      InputRows(n, d, v + i * kPatch * stride + c0, stride);
    }
  }
}

// r = A^T s for one column of 6 product vectors of n floats.
DOPPIO_WINOGRAD_INLINE void OutputRows(int64_t n, const float* const s[kPatch], float* r,
                                       int64_t stride) {
  const float *s0 = s[0], *s1 = s[1], *s2 = s[2], *s3 = s[3], *s4 = s[4], *s5 = s[5];
#pragma omp simd
  for (int64_t m = 0; m < n; ++m) {
    r[m] = s0[m] + s1[m] + s2[m] + s3[m] + s4[m];
    r[stride + m] = s1[m] - s2[m] + 2 * (s3[m] - s4[m]);
    r[2 * stride + m] = s1[m] + s2[m] + 4 * (s3[m] + s4[m]);
    r[3 * stride + m] = s1[m] - s2[m] + 8 * (s3[m] - s4[m]) + s5[m];
  }
}

// One output pixel's n channels: y = epilogue(r + bias (+ sum)). Branch
// free, so it vectorizes; `sum` may be y.
template <bool kSum>
DOPPIO_WINOGRAD_INLINE void FinishPixel(int64_t n, const float* r, const float* bias,
                                        const float* sum, float slope, float lo, float hi,
                                        float* y) {
#pragma omp simd
  for (int64_t m = 0; m < n; ++m) {
    float value = r[m] + bias[m];
    if constexpr (kSum) value += sum[m];
    const float scaled = value * slope;
    value = value > 0.f ? value : scaled;
    value = value < lo ? lo : value;
    y[m] = value > hi ? hi : value;
  }
}

// Y's pixels of one tile (null where the tile passes the image's edge) =
// A^T m A of its products m[point][channel], points `stride` floats apart.
DOPPIO_WINOGRAD_CLONES void TransformOutputTile(int64_t M, const float* m, int64_t stride,
                                                const Epilogue& e,
                                                const float* const sums[kTile * kTile],
                                                float* const ys[kTile * kTile]) {
  alignas(64) float cols[kPatch][kTile][kChannelBlock];  // [column][A^T row][channel]
  alignas(64) float out[kTile][kTile][kChannelBlock];
  for (int64_t m0 = 0; m0 < M; m0 += kChannelBlock) {
    const int64_t n = std::min(kChannelBlock, M - m0);
    for (int j = 0; j < kPatch; ++j) {
      const float* s[kPatch];
      for (int i = 0; i < kPatch; ++i) s[i] = m + (i * kPatch + j) * stride + m0;
      OutputRows(n, s, cols[j][0], kChannelBlock);
    }
    for (int i = 0; i < kTile; ++i) {
      const float* s[kPatch];
      for (int j = 0; j < kPatch; ++j) s[j] = cols[j][i];
      OutputRows(n, s, out[i][0], kChannelBlock);
    }
    for (int i = 0; i < kTile * kTile; ++i) {
      float* y = ys[i];
      if (y == nullptr) continue;
      if (sums[i] != nullptr) {
        FinishPixel<true>(n, out[i / kTile][i % kTile], e.bias + m0, sums[i] + m0, e.slope, e.lo,
                          e.hi, y + m0);
      } else {
        FinishPixel<false>(n, out[i / kTile][i % kTile], e.bias + m0, nullptr, e.slope, e.lo, e.hi,
                           y + m0);
      }
    }
  }
}

// u[point][m] (points `stride` floats apart) = G g G^T for one input
// channel, g[tap][m] (taps `stride` floats apart), vectorized over m.
DOPPIO_WINOGRAD_CLONES void TransformFilterChannel(int64_t M, const float* g, float* u,
                                                   int64_t stride) {
  static const float G[kPatch][3] = {
      {1.f / 4, 0.f, 0.f},           {-1.f / 6, -1.f / 6, -1.f / 6}, {-1.f / 6, 1.f / 6, -1.f / 6},
      {1.f / 24, 1.f / 12, 1.f / 6}, {1.f / 24, -1.f / 12, 1.f / 6}, {0.f, 0.f, 1.f}};
  alignas(64) float gg[kPatch][3][kChannelBlock];  // G g: [G row][kx][channel]
  for (int64_t m0 = 0; m0 < M; m0 += kChannelBlock) {
    const int64_t n = std::min(kChannelBlock, M - m0);
    for (int a = 0; a < kPatch; ++a) {
      for (int kx = 0; kx < 3; ++kx) {
        const float *g0 = g + kx * stride + m0, *g1 = g0 + 3 * stride, *g2 = g0 + 6 * stride;
        float* out = gg[a][kx];
#pragma omp simd
        for (int64_t m = 0; m < n; ++m)
          out[m] = G[a][0] * g0[m] + G[a][1] * g1[m] + G[a][2] * g2[m];
      }
    }
    for (int a = 0; a < kPatch; ++a) {
      for (int b = 0; b < kPatch; ++b) {
        float* out = u + (a * kPatch + b) * stride + m0;
        const float *t0 = gg[a][0], *t1 = gg[a][1], *t2 = gg[a][2];
#pragma omp simd
        for (int64_t m = 0; m < n; ++m)
          out[m] = t0[m] * G[b][0] + t1[m] * G[b][1] + t2[m] * G[b][2];
      }
    }
  }
}

}  // namespace winograd
}  // namespace doppio
