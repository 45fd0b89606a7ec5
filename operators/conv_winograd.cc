#include "operators/conv_winograd.h"

#include <dnnl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

#include "core/enforce.h"
#include "operators/parallel_for.h"
#include "operators/thread_arena.h"
#include "operators/winograd_kernels.h"

namespace doppio {
namespace {

using winograd::Epilogue;
using winograd::kChannelBlock;
using winograd::kPatch;
using winograd::kPoints;
using winograd::kTile;
using winograd::TransformFilterChannel;
using winograd::TransformInputTile;
using winograd::TransformOutputTile;

// Tiles per pass of the three phases: their transformed inputs and products
// (36 x tiles x (C + M) floats) about fill the L2 of one core, measured
// 10-35% faster than one pass over a whole 56x56 image.
constexpr int64_t kBlockBytes = 4 << 20;

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
