// The host instantiation of the functors the CUDA kernels run
// (operators/elementwise_functors.h), checked against references written
// here: formulas in double, explicit index arithmetic for broadcasting, a
// separate Philox4x32-10 and Random123's published known answers.
#include "operators/elementwise_functors.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "operators/elementwise_ops_utils.h"

namespace doppio {
namespace {

std::vector<float> SampleInputs() {
  return {-30.0f, -4.5f, -1.0f, -0.25f, -1e-6f, 0.0f, 1e-6f, 0.3f, 1.0f, 2.5f, 17.0f, 88.0f};
}

TEST(ElementwiseFunctors, UnaryMatchDoubleReferences) {
  for (float x : SampleInputs()) {
    const double xd = x;
    EXPECT_EQ(functors::Relu{}(x), x > 0 ? x : 0.0f) << x;
    EXPECT_NEAR(functors::Sigmoid{}(x), 1.0 / (1.0 + std::exp(-xd)), 1e-7) << x;
    EXPECT_NEAR(functors::Tanh{}(x), std::tanh(xd), 1e-7) << x;
    EXPECT_NEAR(functors::Sqr{}(x), xd * xd, 1e-6 * xd * xd) << x;
    EXPECT_EQ(functors::Neg{}(x), -x);
    if (x < 80.0f) {
      EXPECT_NEAR(functors::Exp{}(x), std::exp(xd), 1e-6 * std::exp(xd)) << x;
    }
    if (x > 0.0f) {
      EXPECT_NEAR(functors::Log{}(x), std::log(xd), 1e-6 * std::max(1.0, std::fabs(std::log(xd))));
      EXPECT_NEAR(functors::Sqrt{}(x), std::sqrt(xd), 1e-6 * std::sqrt(xd)) << x;
    }
  }
  // Sigmoid saturates without overflow in exp.
  EXPECT_EQ(functors::Sigmoid{}(-1000.0f), 0.0f);
  EXPECT_EQ(functors::Sigmoid{}(1000.0f), 1.0f);
  EXPECT_TRUE(std::isnan(functors::Log{}(-1.0f)));
  EXPECT_EQ(functors::Log{}(0.0f), -std::numeric_limits<float>::infinity());
}

TEST(ElementwiseFunctors, GradientsMatchDerivatives) {
  for (float x : SampleInputs()) {
    const double dy = 0.7;
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    const double t = std::tanh(static_cast<double>(x));
    EXPECT_NEAR(functors::SigmoidGradient{}(static_cast<float>(s), 0.7f), dy * s * (1 - s), 1e-7);
    EXPECT_NEAR(functors::TanhGradient{}(static_cast<float>(t), 0.7f), dy * (1 - t * t), 1e-7);
    EXPECT_EQ(functors::ReluGradient{}(x > 0 ? x : 0.0f, 0.7f), x > 0 ? 0.7f : 0.0f);
  }
}

TEST(ElementwiseFunctors, BinaryArithmetic) {
  EXPECT_EQ(functors::Add{}(1.5f, 2.25f), 3.75f);
  EXPECT_EQ(functors::Sub{}(1.5f, 2.25f), -0.75f);
  EXPECT_EQ(functors::Mul{}(1.5f, 2.25f), 3.375f);
  EXPECT_EQ(functors::Div{}(3.0f, 2.0f), 1.5f);
  EXPECT_EQ(functors::Div{}(7, 2), 3);
  EXPECT_EQ(functors::Div{}(-7, 2), -3);  // C++ (and Caffe2) truncation
  // The lowest integer over -1 wraps, as numpy, instead of trapping.
  EXPECT_EQ(functors::Div{}(std::numeric_limits<int32_t>::min(), -1),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(functors::Div{}(int64_t{9}, int64_t{-1}), int64_t{-9});
  EXPECT_TRUE(std::isinf(functors::Div{}(1.0f, 0.0f)));
}

TEST(ElementwiseFunctors, LossPieces) {
  EXPECT_NEAR(functors::LabelCrossEntropy{}(0.25f), -std::log(0.25), 1e-7);
  // Clamped at 1e-20 before the log.
  EXPECT_NEAR(functors::LabelCrossEntropy{}(0.0), -std::log(1e-20), 1e-12);
  EXPECT_NEAR(functors::LabelCrossEntropyGradient{}(0.25f, 2.0f), -8.0, 1e-6);
  EXPECT_NEAR(functors::LabelCrossEntropyGradient{}(0.0, 1.0), -1e20, 1e6);

  const std::vector<double> logits = {1.0, -2.0, 0.5, 3.0};
  std::vector<double> prob(4), dlogits(4);
  const double loss = functors::SoftmaxCrossEntropyRow(logits.data(), 4, 2, prob.data());
  double total = 0;
  for (double l : logits) total += std::exp(l);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(prob[j], std::exp(logits[j]) / total, 1e-15);
  EXPECT_NEAR(loss, std::log(total) - logits[2], 1e-14);
  functors::SoftmaxCrossEntropyRowGradient(prob.data(), 4, 2, 0.5, dlogits.data());
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(dlogits[j], 0.5 * (std::exp(logits[j]) / total - (j == 2 ? 1 : 0)), 1e-15);
  }
  // Huge logits do not overflow: the row max is subtracted first.
  const std::vector<float> big = {1000.0f, 1000.0f};
  std::vector<float> big_prob(2);
  EXPECT_NEAR(functors::SoftmaxCrossEntropyRow(big.data(), 2, 0, big_prob.data()),
              std::log(2.0), 1e-6);
}

// ---- broadcasting ----

TEST(BroadcastIndexMapper, MatchesExplicitIndexArithmetic) {
  // out [2, 3, 4]; A [1, 3, 1]; B [2, 1, 4].
  functors::BroadcastIndexMapper mapper;
  ASSERT_TRUE(functors::MakeBroadcastIndexMapper({1, 3, 1}, {2, 1, 4}, {2, 3, 4}, &mapper));
  int64_t out = 0;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k, ++out) {
        int64_t ia, ib;
        mapper.Map(out, &ia, &ib);
        EXPECT_EQ(ia, j) << out;
        EXPECT_EQ(ib, i * 4 + k) << out;
      }
    }
  }
  EXPECT_FALSE(functors::MakeBroadcastIndexMapper(std::vector<int64_t>(9, 1),
                                                  std::vector<int64_t>(9, 1),
                                                  std::vector<int64_t>(9, 1), &mapper));
}

TEST(BroadcastIndexMapper, ScalarAndRankZero) {
  functors::BroadcastIndexMapper mapper;
  ASSERT_TRUE(functors::MakeBroadcastIndexMapper({}, {}, {}, &mapper));
  int64_t ia = -1, ib = -1;
  mapper.Map(0, &ia, &ib);
  EXPECT_EQ(ia, 0);
  EXPECT_EQ(ib, 0);
  ASSERT_TRUE(functors::MakeBroadcastIndexMapper({5, 6}, {1, 1}, {5, 6}, &mapper));
  mapper.Map(17, &ia, &ib);
  EXPECT_EQ(ia, 17);
  EXPECT_EQ(ib, 0);
}

// The CPU ops walk broadcasts with an odometer (faster than a div/mod per
// element); the mapper the CUDA launcher uses must give the very same result.
TEST(BroadcastIndexMapper, CpuOpWalkEqualsMapperWalkBitForBit) {
  const std::vector<std::vector<std::vector<int64_t>>> cases = {
      {{2, 3, 4}, {1, 3, 1}, {2, 3, 4}},
      {{4, 1, 5, 1}, {1, 3, 1, 2}, {4, 3, 5, 2}},
      {{7}, {1}, {7}},
      {{1, 6}, {5, 1}, {5, 6}},
  };
  for (const auto& c : cases) {
    BroadcastPlan plan;
    plan.a = c[0];
    plan.b = c[1];
    plan.out = c[2];
    plan.output_dims = c[2];
    const int64_t a_count = CheckedNumElements(plan.a);
    const int64_t b_count = CheckedNumElements(plan.b);
    const int64_t n = CheckedNumElements(plan.out);
    std::vector<float> a(a_count), b(b_count);
    for (int64_t i = 0; i < a_count; ++i) a[i] = 0.37f * static_cast<float>(i) - 1.1f;
    for (int64_t i = 0; i < b_count; ++i) b[i] = 1.3f - 0.29f * static_cast<float>(i);
    std::vector<float> via_op(n), via_mapper(n);
    BroadcastBinary(plan, a.data(), b.data(), via_op.data(), functors::Div{});
    functors::BroadcastIndexMapper mapper;
    ASSERT_TRUE(functors::MakeBroadcastIndexMapper(plan.a, plan.b, plan.out, &mapper));
    functors::CpuBinaryMapped(functors::Div{}, mapper, n, a.data(), b.data(), via_mapper.data());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(via_op[i], via_mapper[i]) << "element " << i;
    }
  }
}

// ---- Philox4x32-10 ----

// An independent reference: the round function written from the paper's
// definition with 64-bit products and explicit key schedule.
std::array<uint32_t, 4> ReferencePhilox(std::array<uint32_t, 4> x, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] = static_cast<uint32_t>(k[0] + 0x9E3779B9ull);
      k[1] = static_cast<uint32_t>(k[1] + 0xBB67AE85ull);
    }
    const uint64_t p0 = 0xD2511F53ull * x[0];
    const uint64_t p1 = 0xCD9E8D57ull * x[2];
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return x;
}

TEST(Philox, KnownAnswersFromRandom123) {
  struct Case {
    std::array<uint32_t, 4> counter;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> expected;
  };
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  const Case cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ReferencePhilox(c.counter, c.key), c.expected);
    const functors::Philox4x32 got = functors::Philox4x32_10(
        functors::Philox4x32{{c.counter[0], c.counter[1], c.counter[2], c.counter[3]}}, c.key[0],
        c.key[1]);
    EXPECT_EQ((std::array<uint32_t, 4>{got.v[0], got.v[1], got.v[2], got.v[3]}), c.expected);
  }
}

TEST(Philox, StreamLaysOutElementOffsetAndSeed) {
  const functors::PhiloxStream stream{0x0123456789abcdefull, 0x1122334455667788ull};
  const uint64_t element = 0xdeadbeef00000005ull;
  const functors::Philox4x32 got = stream.Block(element);
  const auto expected = ReferencePhilox({0x00000005, 0xdeadbeef, 0x55667788, 0x11223344},
                                        {0x89abcdef, 0x01234567});
  EXPECT_EQ((std::array<uint32_t, 4>{got.v[0], got.v[1], got.v[2], got.v[3]}), expected);
}

TEST(Philox, UniformFillIsInRangeDeterministicAndUniform) {
  const functors::UniformFill fill{{42, 0}, -2.0f, 3.0f};
  const int64_t n = 200000;
  std::vector<float> y(n);
  functors::CpuGenerate(fill, n, y.data());
  double sum = 0;
  std::vector<int> buckets(10, 0);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GE(y[i], -2.0f);
    ASSERT_LT(y[i], 3.0f);
    sum += y[i];
    ++buckets[static_cast<int>((y[i] + 2.0f) / 0.5f)];
    // Element i depends on i alone: the same value from a fresh evaluation.
    if (i % 9973 == 0) {
      ASSERT_EQ(fill(i), y[i]);
    }
  }
  EXPECT_NEAR(sum / n, 0.5, 0.02);
  for (int count : buckets) EXPECT_NEAR(count, n / 10, 5 * std::sqrt(n / 10.0));
  // Another offset (the op's next run) or seed draws other numbers.
  EXPECT_NE((functors::UniformFill{{42, 1}, -2.0f, 3.0f}(0)), y[0]);
  EXPECT_NE((functors::UniformFill{{43, 0}, -2.0f, 3.0f}(0)), y[0]);
}

TEST(Philox, GaussianFillMoments) {
  const functors::GaussianFill fill{{7, 3}, 1.5f, 0.5f};
  const int64_t n = 200000;
  double sum = 0, sum_sq = 0;
  int64_t within_one_sd = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = fill(i);
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += v * v;
    within_one_sd += std::fabs(v - 1.5) < 0.5;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 1.5, 0.01);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 0.5, 0.01);
  EXPECT_NEAR(static_cast<double>(within_one_sd) / n, 0.6827, 0.01);
}

TEST(Philox, DropoutKeepRate) {
  const functors::DropoutKeep keep{{99, 0}, 0.3f};
  const int64_t n = 100000;
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += keep(i);
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.01);
  EXPECT_FALSE((functors::DropoutKeep{{99, 0}, 1.0f}(5)));
  EXPECT_TRUE((functors::DropoutKeep{{99, 0}, 0.0f}(5)));
}

}  // namespace
}  // namespace doppio
