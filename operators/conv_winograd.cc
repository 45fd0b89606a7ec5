#include "operators/conv_winograd.h"

#include <dnnl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

#include "core/enforce.h"
#include "operators/parallel_for.h"
#include "operators/thread_arena.h"

namespace doppio {
namespace {

constexpr int kTile = 4;     // output tile side
constexpr int kPatch = 6;    // input patch side: kTile + 3 - 1
constexpr int kPoints = 36;  // kPatch * kPatch transformed points
// Channels transformed together: the 6x6 intermediate of that many stays in
// L1 (9 KB).
constexpr int64_t kChannelBlock = 64;
// Tiles per pass of the three phases: their transformed inputs and products
// (36 x tiles x (C + M) floats) about fill the L2 of one core, measured
// 10-35% faster than one pass over a whole 56x56 image.
constexpr int64_t kBlockBytes = 4 << 20;

// Lavin & Gray's F(4x4, 3x3) with points 0, +-1, +-2 and infinity:
//   B^T = [4  0 -5  0 1 0; 0 -4 -4  1 1 0; 0  4 -4 -1 1 0;
//          0 -2 -1  2 1 0; 0  2 -1 -2 1 0; 0  4  0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6;
//          1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// Each applies along one axis of a patch at a time, vectorized over
// channels: d[i] is the i-th row (or column) of channel vectors.

// The transforms are compiled twice, for AVX2 and for the baseline, and
// picked at load time; their row helpers inline into each. Without
// no-trapping-math GCC keeps the epilogue's compare-and-selects as branches
// (a comparison may raise FP flags nobody reads here), and the epilogue was
// then half of the convolution's time.
#define DOPPIO_WINOGRAD_CLONES \
  __attribute__((target_clones("avx2", "default"), optimize("no-trapping-math")))
#define DOPPIO_WINOGRAD_INLINE inline __attribute__((always_inline, optimize("no-trapping-math")))

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

// What the output transform applies after A^T m A: the bias (zeros when
// the op has none), a summand and value > 0 ? value : value * slope, then a
// clamp to [lo, hi] (Relu: slope 0 or LeakyRelu's alpha; Clip: its bounds;
// none: slope 1, no bounds). Other activations run over Y after.
struct Epilogue {
  const float* bias = nullptr;
  float slope = 1.f;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

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

// Where tile t lies: image n, tile row and column.
struct TileGrid {
  int64_t rows, cols;  // tiles per image
  int64_t height, width, out_height, out_width, pad_top, pad_left;

  void Locate(int64_t t, int64_t* n, int64_t* row, int64_t* col) const {
    *n = t / (rows * cols);
    *row = t % (rows * cols) / cols;
    *col = t % cols;
  }
};

Epilogue EpilogueOf(const float* bias, const EltwiseFn& act) {
  Epilogue e;
  e.bias = bias;
  if (act.algorithm == EltwiseAlgorithm::kRelu) {
    e.slope = act.alpha;
  } else if (act.algorithm == EltwiseAlgorithm::kClip) {
    e.lo = act.alpha;
    e.hi = act.beta;
  }
  return e;
}

bool InEpilogue(const EltwiseFn& act) {
  return act.empty() || act.algorithm == EltwiseAlgorithm::kRelu ||
         act.algorithm == EltwiseAlgorithm::kClip;
}

}  // namespace

bool WinogradF43Handles(const ConvProblem& p) {
  const ConvPoolGeometry& g = p.geometry;
  if (g.num_spatial() != 2 || g.order != StorageOrder::kNHWC || p.group != 1) return false;
  for (int d = 0; d < 2; ++d) {
    if (g.kernel[d] != 3 || g.stride[d] != 1 || g.dilation[d] != 1) return false;
  }
  return true;
}

void WinogradF43Conv::TransformFilter(int64_t C, int64_t M, const float* w) {
  // The NHWC filter [M][tap][C] as [tap][C][M] first (in the arena until
  // Run reserves it again), so the transform reads and writes along M.
  float* taps =
      static_cast<float*>(ThreadArena::ForThisThread().Reserve(sizeof(float) * 9 * C * M));
  ParallelFor(
      9 * C,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {  // row = tap * C + c
          const float* from = w + row / C * C + row % C;
          float* to = taps + row * M;
          for (int64_t m = 0; m < M; ++m) to[m] = from[m * 9 * C];
        }
      },
      RowsPerThread(M));
  filter_.Resize({kPoints, C, M});
  float* u = filter_.mutable_data<float>();
  ParallelFor(
      C,
      [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c)
          TransformFilterChannel(M, taps + c * M, u + c * M, C * M);
      },
      RowsPerThread(9 * M));
  filter_source_ = w;
  filter_c_ = C;
  filter_m_ = M;
}

void WinogradF43Conv::Run(const ConvProblem& p, const float* x, const float* w, const float* bias,
                          const float* sum, const EltwiseFn& act, float* y) {
  DOPPIO_ENFORCE(WinogradF43Handles(p), "Winograd F(4x4, 3x3) got a convolution it does not do");
  const ConvPoolGeometry& g = p.geometry;
  const int64_t C = g.channels, M = p.out_channels;
  if (w != filter_source_ || C != filter_c_ || M != filter_m_) TransformFilter(C, M, w);
  const TileGrid grid{(g.output[0] + kTile - 1) / kTile,
                      (g.output[1] + kTile - 1) / kTile,
                      g.input[0],
                      g.input[1],
                      g.output[0],
                      g.output[1],
                      g.pads[0],
                      g.pads[1]};
  const int64_t tiles = g.batch * grid.rows * grid.cols;
  const int64_t block = std::max<int64_t>(
      16, std::min<int64_t>(tiles, kBlockBytes / (kPoints * sizeof(float) * (C + M))));
  // Tile inputs, their products, and a row of zeros for padding pixels.
  float* v = static_cast<float*>(ThreadArena::ForThisThread().Reserve(
      sizeof(float) * (kPoints * block * (C + M) + std::max(C, M))));
  float* products = v + kPoints * block * C;
  float* zeros = products + kPoints * block * M;
  std::fill(zeros, zeros + std::max(C, M), 0.f);
  const float* u = filter_.data<float>();
  const Epilogue epilogue = EpilogueOf(bias != nullptr ? bias : zeros, act);
  std::atomic<bool> gemm_failed{false};
  for (int64_t t0 = 0; t0 < tiles; t0 += block) {
    const int64_t count = std::min(block, tiles - t0);
    ParallelFor(
        count,
        [&](int64_t begin, int64_t end) {
          for (int64_t k = begin; k < end; ++k) {
            int64_t n, row, col;
            grid.Locate(t0 + k, &n, &row, &col);
            const float* pixels[kPoints];
            for (int i = 0; i < kPatch; ++i) {
              for (int j = 0; j < kPatch; ++j) {
                const int64_t h = row * kTile - grid.pad_top + i;
                const int64_t c = col * kTile - grid.pad_left + j;
                const bool inside = h >= 0 && h < grid.height && c >= 0 && c < grid.width;
                pixels[i * kPatch + j] =
                    inside ? x + ((n * grid.height + h) * grid.width + c) * C : nullptr;
              }
            }
            TransformInputTile(C, pixels, zeros, v + k * C, count * C);
          }
        },
        1);
    // Each point's [count x C] x [C x M] product on one thread: oneDNN's
    // sgemm inside a parallel region runs single-threaded, so the bits do
    // not depend on the thread count.
    ParallelForTasks(kPoints, [&](int64_t point) {
      const dnnl_status_t status =
          dnnl_sgemm('N', 'N', count, M, C, 1.f, v + point * count * C, C, u + point * C * M, M,
                     0.f, products + point * count * M, M);
      if (status != dnnl_success) gemm_failed = true;
    });
    DOPPIO_ENFORCE(!gemm_failed, "oneDNN's sgemm failed in a Winograd convolution");
    ParallelFor(
        count,
        [&](int64_t begin, int64_t end) {
          for (int64_t k = begin; k < end; ++k) {
            int64_t n, row, col;
            grid.Locate(t0 + k, &n, &row, &col);
            const float* sums[kTile * kTile];
            float* ys[kTile * kTile];
            for (int i = 0; i < kTile; ++i) {
              for (int j = 0; j < kTile; ++j) {
                const int64_t h = row * kTile + i, c = col * kTile + j;
                const bool inside = h < grid.out_height && c < grid.out_width;
                const int64_t offset = ((n * grid.out_height + h) * grid.out_width + c) * M;
                ys[i * kTile + j] = inside ? y + offset : nullptr;
                sums[i * kTile + j] = inside && sum != nullptr ? sum + offset : nullptr;
              }
            }
            TransformOutputTile(M, products + k * M, count * M, epilogue, sums, ys);
          }
        },
        1);
  }
  if (!InEpilogue(act)) {
    const int64_t count = g.batch * g.output[0] * g.output[1] * M;
    if (!DnnlEltwiseForward(act, count, y, y)) {
      for (int64_t i = 0; i < count; ++i) y[i] = EltwiseReference(act, y[i]);
    }
  }
}

}  // namespace doppio
