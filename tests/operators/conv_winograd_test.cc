// WinogradF43Conv (operators/conv_winograd.h) against a direct convolution
// summed in double: odd image sizes (partial tiles), pads of 0-2 on each
// side, channel counts around the 64-channel blocks and the 8-wide vectors,
// bias, summand (also in place), the epilogue's activations and one that
// runs after it, and a filter fed anew. The op-level tests (conv_op_test.py)
// reach the same kernel through Conv and ConvFusion.
#include "operators/conv_winograd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace doppio {
namespace {

struct Case {
  int64_t batch, height, width, channels, out_channels;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
};

ConvProblem ProblemOf(const Case& c) {
  ConvPoolGeometry g;
  g.order = StorageOrder::kNHWC;
  g.batch = c.batch;
  g.channels = c.channels;
  g.input = {c.height, c.width};
  g.kernel = {3, 3};
  g.stride = {1, 1};
  g.dilation = {1, 1};
  g.pads = {c.pad_top, c.pad_left, c.pad_bottom, c.pad_right};
  g.output = {c.height + c.pad_top + c.pad_bottom - 2, c.width + c.pad_left + c.pad_right - 2};
  return ConvProblemOf(g, c.out_channels, 1);
}

std::vector<float> Random(size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// NHWC direct convolution in double, plus bias and summand.
std::vector<double> Reference(const ConvProblem& p, const std::vector<float>& x,
                              const std::vector<float>& w, const float* bias, const float* sum) {
  const ConvPoolGeometry& g = p.geometry;
  const int64_t C = g.channels, M = p.out_channels, OH = g.output[0], OW = g.output[1];
  std::vector<double> y(g.batch * OH * OW * M);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        for (int64_t m = 0; m < M; ++m) {
          const int64_t at = ((n * OH + oh) * OW + ow) * M + m;
          double acc = (bias != nullptr ? bias[m] : 0.0) + (sum != nullptr ? sum[at] : 0.0);
          for (int64_t ky = 0; ky < 3; ++ky) {
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t h = oh + ky - g.pads[0], c0 = ow + kx - g.pads[1];
              if (h < 0 || h >= g.input[0] || c0 < 0 || c0 >= g.input[1]) continue;
              for (int64_t c = 0; c < C; ++c) {
                acc += static_cast<double>(x[((n * g.input[0] + h) * g.input[1] + c0) * C + c]) *
                       w[((m * 3 + ky) * 3 + kx) * C + c];
              }
            }
          }
          y[at] = acc;
        }
      }
    }
  }
  return y;
}

// Winograd's rounding grows with the channel count and the transforms'
// constants: allow 2e-5 of the output's largest magnitude.
void ExpectNear(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  double largest = 1e-3;
  for (double v : want) largest = std::max(largest, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-5 * largest) << "at " << i;
  }
}

TEST(WinogradF43Test, HandlesOnlyNhwc3x3UnitStride) {
  ConvProblem p = ProblemOf({1, 8, 8, 16, 16, 1, 1, 1, 1});
  EXPECT_TRUE(WinogradF43Handles(p));
  ConvProblem nchw = p;
  nchw.geometry.order = StorageOrder::kNCHW;
  EXPECT_FALSE(WinogradF43Handles(nchw));
  ConvProblem strided = p;
  strided.geometry.stride = {2, 2};
  EXPECT_FALSE(WinogradF43Handles(strided));
  ConvProblem dilated = p;
  dilated.geometry.dilation = {1, 2};
  EXPECT_FALSE(WinogradF43Handles(dilated));
  ConvProblem grouped = ConvProblemOf(p.geometry, 16, 2);
  EXPECT_FALSE(WinogradF43Handles(grouped));
}

TEST(WinogradF43Test, MatchesDirectConvolution) {
  const Case cases[] = {
      {1, 8, 8, 16, 16, 1, 1, 1, 1},   {2, 7, 5, 3, 5, 1, 1, 1, 1},
      {1, 13, 11, 24, 40, 0, 0, 0, 0}, {1, 9, 10, 65, 70, 2, 1, 0, 2},
      {3, 6, 6, 8, 130, 1, 2, 2, 0},   {1, 3, 3, 7, 9, 1, 1, 1, 1},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    const ConvProblem p = ProblemOf(c);
    const auto& g = p.geometry;
    const auto x = Random(g.batch * g.input[0] * g.input[1] * g.channels, seed++, 1.f);
    const auto w = Random(p.out_channels * 9 * g.channels, seed++, 0.3f);
    const auto bias = Random(p.out_channels, seed++, 1.f);
    const size_t out = g.batch * g.output[0] * g.output[1] * p.out_channels;
    std::vector<float> y(out);
    WinogradF43Conv conv;
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      conv.Run(p, x.data(), w.data(), b, nullptr, {}, y.data());
      SCOPED_TRACE(testing::Message() << "case " << seed << (b ? " with bias" : ""));
      ExpectNear(y, Reference(p, x, w, b, nullptr));
    }
  }
}

TEST(WinogradF43Test, SummandInPlaceAndActivations) {
  const ConvProblem p = ProblemOf({2, 9, 7, 20, 24, 1, 1, 1, 1});
  const auto& g = p.geometry;
  const auto x = Random(g.batch * g.input[0] * g.input[1] * g.channels, 11, 1.f);
  const auto w = Random(p.out_channels * 9 * g.channels, 12, 0.3f);
  const auto bias = Random(p.out_channels, 13, 1.f);
  const auto summand = Random(g.batch * g.output[0] * g.output[1] * p.out_channels, 14, 2.f);
  const std::vector<double> linear = Reference(p, x, w, bias.data(), summand.data());
  const EltwiseFn fns[] = {{EltwiseAlgorithm::kRelu},
                           {EltwiseAlgorithm::kRelu, 0.1f},
                           {EltwiseAlgorithm::kClip, -0.5f, 0.75f},
                           {EltwiseAlgorithm::kLogistic},
                           {EltwiseAlgorithm::kTanh}};
  WinogradF43Conv conv;
  for (const EltwiseFn& fn : fns) {
    for (bool in_place : {false, true}) {
      std::vector<float> y = in_place ? summand : std::vector<float>(summand.size());
      conv.Run(p, x.data(), w.data(), bias.data(), in_place ? y.data() : summand.data(), fn,
               y.data());
      std::vector<double> want(linear.size());
      for (size_t i = 0; i < want.size(); ++i) {
        want[i] = EltwiseReference(fn, static_cast<float>(linear[i]));
      }
      SCOPED_TRACE(EltwiseName(fn) + (in_place ? " in place" : ""));
      ExpectNear(y, want);
    }
  }
}

TEST(WinogradF43Test, FollowsANewFilter) {
  const ConvProblem p = ProblemOf({1, 10, 10, 16, 16, 1, 1, 1, 1});
  const auto& g = p.geometry;
  const auto x = Random(g.batch * g.input[0] * g.input[1] * g.channels, 21, 1.f);
  std::vector<float> y(g.batch * g.output[0] * g.output[1] * p.out_channels);
  WinogradF43Conv conv;
  const auto first = Random(p.out_channels * 9 * g.channels, 22, 0.3f);
  conv.Run(p, x.data(), first.data(), nullptr, nullptr, {}, y.data());
  ExpectNear(y, Reference(p, x, first, nullptr, nullptr));
  // Another filter in other storage: transformed anew.
  const auto second = Random(p.out_channels * 9 * g.channels, 23, 0.3f);
  conv.Run(p, x.data(), second.data(), nullptr, nullptr, {}, y.data());
  ExpectNear(y, Reference(p, x, second, nullptr, nullptr));
}

}  // namespace
}  // namespace doppio
