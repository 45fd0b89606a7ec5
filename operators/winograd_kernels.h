// The tile transforms of Winograd F(4x4, 3x3) (operators/conv_winograd.h
// runs the convolution around them): pure loops over raw float arrays,
// vectorized over channels, compiled for AVX2 and the baseline and picked at
// load time.
//
// This library alone is built with -fno-trapping-math: without it GCC keeps
// the epilogue's compare-and-selects as branches (a comparison may raise FP
// flags nobody reads here), and the epilogue was then half of the
// convolution's time.
//
// Thread-safety: pure functions; any thread may call.
#pragma once

#include <cstdint>
#include <limits>

namespace doppio {
namespace winograd {

constexpr int kTile = 4;     // output tile side
constexpr int kPatch = 6;    // input patch side: kTile + 3 - 1
constexpr int kPoints = 36;  // kPatch * kPatch transformed points
// Channels transformed together: the 6x6 intermediate of that many stays in
// L1 (9 KB).
constexpr int64_t kChannelBlock = 64;

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

// V[point][c] (points `stride` floats apart) = B^T d B of one tile, d's
// pixels given as pointers to C channels, null for padding (read as
// `zeros`, at least min(C, 64) floats).
void TransformInputTile(int64_t C, const float* const pixels[kPoints], const float* zeros, float* v,
                        int64_t stride);

// Y's pixels of one tile (null where the tile passes the image's edge) =
// epilogue(A^T m A) of its products m[point][channel], points `stride`
// floats apart; sums[i] (or null) is added to pixel i, which may be ys[i].
void TransformOutputTile(int64_t M, const float* m, int64_t stride, const Epilogue& e,
                         const float* const sums[kTile * kTile], float* const ys[kTile * kTile]);

// u[point][m] (points `stride` floats apart) = G g G^T for one input
// channel, g[tap][m] (taps `stride` floats apart), vectorized over m.
void TransformFilterChannel(int64_t M, const float* g, float* u, int64_t stride);

}  // namespace winograd
}  // namespace doppio
