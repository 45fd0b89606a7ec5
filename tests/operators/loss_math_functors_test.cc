// The host instantiation of the functors the CUDA loss, math and
// broadcast-gradient kernels run (operators/loss_functors.h,
// math_functors.h, broadcast_gradient_functors.h), checked against
// references written here: naive softmax and cross entropy in long double,
// central differences of the loss, and nested loops over explicit indices
// for the broadcast reductions. No GPU needed: this is what CI checks of the
// GPU's math.
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "operators/broadcast_gradient_functors.h"
#include "operators/loss_functors.h"
#include "operators/math_functors.h"

namespace doppio {
namespace {

using functors::SoftmaxLossLayout;
using functors::SoftmaxLossTargets;

// Logits of a layout, deterministic and of moderate size (so the naive
// reference needs no max subtraction).
std::vector<double> Logits(const SoftmaxLossLayout& layout) {
  std::vector<double> x(layout.samples() * layout.classes);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * static_cast<double>(i) + 0.3) * 3;
  return x;
}

// Softmax probability of class c of sample (o, s), computed naively.
long double ReferenceProb(const SoftmaxLossLayout& l, const std::vector<double>& x, int64_t o,
                          int64_t c, int64_t s) {
  auto logit = [&](int64_t k) -> long double { return x[(o * l.classes + k) * l.inner + s]; };
  long double total = 0;
  for (int64_t k = 0; k < l.classes; ++k) total += std::exp(logit(k));
  return std::exp(logit(c)) / total;
}

// Caffe2's loss: scale * sum_i w_i * CE_i / sum_i w_i over counted samples.
template <typename L>
double ReferenceClassLoss(const SoftmaxLossLayout& l, const std::vector<double>& x,
                          const std::vector<L>& labels, const std::vector<double>& weights,
                          bool spatial, double scale) {
  long double loss = 0, weight_sum = 0;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t s = 0; s < l.inner; ++s) {
      const int64_t sample = o * l.inner + s;
      if (spatial && labels[sample] == L(-1)) continue;
      const long double w = weights.empty() ? 1.0L : weights[sample];
      loss += -w * std::log(ReferenceProb(l, x, o, labels[sample], s));
      weight_sum += w;
    }
  }
  return weight_sum == 0 ? 0.0 : static_cast<double>(scale * loss / weight_sum);
}

TEST(SoftmaxLossFunctors, ClassLabelsMatchNaiveReference) {
  const SoftmaxLossLayout layout{4, 5, 1};
  const std::vector<double> x = Logits(layout);
  const std::vector<int32_t> labels = {0, 4, 2, 2};
  std::vector<double> p(x.size());
  const SoftmaxLossTargets<double, int32_t> targets{layout, labels.data(), nullptr, nullptr,
                                                    false};
  const double loss = functors::CpuSoftmaxLoss(targets, x.data(), 0.5, p.data());
  EXPECT_NEAR(loss, ReferenceClassLoss(layout, x, labels, {}, false, 0.5), 1e-13);
  for (int64_t o = 0; o < 4; ++o) {
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_NEAR(p[o * 5 + c], static_cast<double>(ReferenceProb(layout, x, o, c, 0)), 1e-15);
    }
  }
}

TEST(SoftmaxLossFunctors, WeightsAndInt64Labels) {
  const SoftmaxLossLayout layout{3, 4, 1};
  const std::vector<double> x = Logits(layout);
  const std::vector<int64_t> labels = {3, 0, 1};
  const std::vector<double> weights = {0.5, 2.0, 0.0};
  std::vector<double> p(x.size());
  const SoftmaxLossTargets<double, int64_t> targets{layout, labels.data(), nullptr,
                                                    weights.data(), false};
  EXPECT_NEAR(functors::CpuSoftmaxLoss(targets, x.data(), 1.0, p.data()),
              ReferenceClassLoss(layout, x, labels, weights, false, 1.0), 1e-13);
  // All weights 0: the loss is 0, not nan.
  const std::vector<double> zeros(3, 0.0);
  const SoftmaxLossTargets<double, int64_t> unweighted{layout, labels.data(), nullptr,
                                                       zeros.data(), false};
  EXPECT_EQ(functors::CpuSoftmaxLoss(unweighted, x.data(), 1.0, p.data()), 0.0);
}

TEST(SoftmaxLossFunctors, SpatialSkipsIgnoredPixels) {
  // [N=2, D=3, H*W=4], NCHW: class c of pixel s of image o at (o*3+c)*4+s.
  const SoftmaxLossLayout layout{2, 3, 4};
  const std::vector<double> x = Logits(layout);
  const std::vector<int32_t> labels = {0, -1, 2, 1, -1, -1, 1, 0};
  const std::vector<double> weights = {1, 2, 3, 4, 5, 6, 0.5, 0.25};
  std::vector<double> p(x.size());
  const SoftmaxLossTargets<double, int32_t> targets{layout, labels.data(), nullptr,
                                                    weights.data(), true};
  EXPECT_NEAR(functors::CpuSoftmaxLoss(targets, x.data(), 2.0, p.data()),
              ReferenceClassLoss(layout, x, labels, weights, true, 2.0), 1e-13);
  // Ignored pixels still get their softmax.
  EXPECT_NEAR(p[(0 * 3 + 1) * 4 + 1], static_cast<double>(ReferenceProb(layout, x, 0, 1, 1)),
              1e-15);
}

TEST(SoftmaxLossFunctors, ProbabilityLabels) {
  const SoftmaxLossLayout layout{2, 3, 1};
  const std::vector<double> x = Logits(layout);
  const std::vector<double> t = {0.2, 0.3, 0.5, 1.0, 0.0, 0.0};
  const std::vector<double> weights = {3.0, 1.0};
  std::vector<double> p(x.size());
  const SoftmaxLossTargets<double, int32_t> targets{layout, nullptr, t.data(), weights.data(),
                                                    false};
  long double loss = 0;
  for (int o = 0; o < 2; ++o) {
    for (int c = 0; c < 3; ++c) {
      loss += -weights[o] * t[o * 3 + c] * std::log(ReferenceProb(layout, x, o, c, 0));
    }
  }
  EXPECT_NEAR(functors::CpuSoftmaxLoss(targets, x.data(), 1.0, p.data()),
              static_cast<double>(loss / 4.0L), 1e-13);
}

TEST(SoftmaxLossFunctors, BadTargetsGiveNan) {
  const SoftmaxLossLayout layout{2, 3, 1};
  const std::vector<double> x = Logits(layout);
  std::vector<double> p(x.size()), dx(x.size());
  for (int32_t bad : {3, -1, -7}) {
    const std::vector<int32_t> labels = {0, bad};
    const SoftmaxLossTargets<double, int32_t> targets{layout, labels.data(), nullptr, nullptr,
                                                      false};
    EXPECT_TRUE(std::isnan(functors::CpuSoftmaxLoss(targets, x.data(), 1.0, p.data()))) << bad;
    functors::CpuSoftmaxLossGradient(targets, p.data(), 1.0, 1.0, dx.data());
    for (double g : dx) EXPECT_TRUE(std::isnan(g)) << bad;
  }
  // -1 is only ignored with spatial=1; other negatives never are.
  const std::vector<int32_t> minus_seven = {0, -7};
  const SoftmaxLossTargets<double, int32_t> spatial{{2, 3, 1}, minus_seven.data(), nullptr,
                                                    nullptr, true};
  EXPECT_TRUE(std::isnan(functors::CpuSoftmaxLoss(spatial, x.data(), 1.0, p.data())));
  for (const std::vector<double>& t : {std::vector<double>{0.5, 0.5, 0.1, 1, 0, 0},
                                       std::vector<double>{1.5, -0.5, 0, 1, 0, 0}}) {
    const SoftmaxLossTargets<double, int32_t> probs{layout, nullptr, t.data(), nullptr, false};
    EXPECT_TRUE(std::isnan(functors::CpuSoftmaxLoss(probs, x.data(), 1.0, p.data())));
  }
}

// The gradient against central differences of the loss itself (d_loss 3).
template <typename L>
void CheckGradientNumerically(const SoftmaxLossTargets<double, L>& targets,
                              std::vector<double> x, double scale) {
  std::vector<double> p(x.size()), dx(x.size()), scratch(x.size());
  functors::CpuSoftmaxLoss(targets, x.data(), scale, p.data());
  functors::CpuSoftmaxLossGradient(targets, p.data(), scale, 3.0, dx.data());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = functors::CpuSoftmaxLoss(targets, x.data(), scale, scratch.data());
    x[i] = saved - h;
    const double minus = functors::CpuSoftmaxLoss(targets, x.data(), scale, scratch.data());
    x[i] = saved;
    EXPECT_NEAR(dx[i], 3.0 * (plus - minus) / (2 * h), 1e-7) << "element " << i;
  }
}

TEST(SoftmaxLossFunctors, GradientsMatchFiniteDifferences) {
  const SoftmaxLossLayout rows{3, 4, 1};
  const std::vector<int32_t> labels = {1, 3, 0};
  const std::vector<double> weights = {0.5, 2.0, 1.0};
  CheckGradientNumerically(
      SoftmaxLossTargets<double, int32_t>{rows, labels.data(), nullptr, weights.data(), false},
      Logits(rows), 0.7);
  const SoftmaxLossLayout pixels{2, 3, 4};
  const std::vector<int64_t> pixel_labels = {0, -1, 2, 1, -1, -1, 1, 0};
  CheckGradientNumerically(
      SoftmaxLossTargets<double, int64_t>{pixels, pixel_labels.data(), nullptr, nullptr, true},
      Logits(pixels), 1.0);
  const std::vector<double> t = {0.25, 0.25, 0.5, 0.0, 0.1, 0.2, 0.3, 0.4, 1, 0, 0, 0};
  CheckGradientNumerically(
      SoftmaxLossTargets<double, int32_t>{rows, nullptr, t.data(), weights.data(), false},
      Logits(rows), 1.0);
}

TEST(SoftmaxLossFunctors, NoClassesWritesNothing) {
  const SoftmaxLossLayout empty{2, 0, 1};
  double lse = functors::SoftmaxOfSample<double>(empty, 0, 0, nullptr, nullptr);
  EXPECT_EQ(lse, 0.0);
}

TEST(AveragedLossFunctors, MeanAndGradient) {
  EXPECT_DOUBLE_EQ(functors::AverageOf(10.0, 4), 2.5);
  EXPECT_EQ(functors::AverageOf(10.0, 0), 0.0);
  EXPECT_FLOAT_EQ(functors::AveragedLossGradientValue(3.0f, 4), 0.75f);
  EXPECT_EQ(functors::AveragedLossGradientValue(3.0, 0), 0.0);
}

// ---- Scale, WeightedSum, Sum ----

TEST(MathFunctors, ScaleRoundsTheArgumentToFloatFirst) {
  // Caffe2 holds scale as a float: 0.1f, not 0.1, multiplies a double.
  EXPECT_EQ(functors::Scale{0.1f}(3.0), static_cast<double>(0.1f) * 3.0);
  EXPECT_EQ(functors::Scale{-2.5f}(4.0f), -10.0f);
}

TEST(MathFunctors, ScalarOperandReadsHostValueOrPointer) {
  const float stored = -0.25f;
  EXPECT_EQ((functors::ScalarOperand<float>{nullptr, 1.5f}.Get()), 1.5f);
  EXPECT_EQ((functors::ScalarOperand<float>{&stored, 1.5f}.Get()), -0.25f);
}

TEST(MathFunctors, WeightedTermsAndSums) {
  const std::vector<double> x0 = {1, 2, 3}, x1 = {-1, 0.5, 4};
  std::vector<double> y(3);
  // A float32 weight on double data, as Caffe2 writes ONE and the lr.
  functors::CpuWeightedTerm(3, functors::ScalarOperand<float>{nullptr, 0.1f}, x0.data(), false,
                            y.data());
  functors::CpuWeightedTerm(3, functors::ScalarOperand<double>{nullptr, -2.0}, x1.data(), true,
                            y.data());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(y[i], static_cast<double>(0.1f) * x0[i] + -2.0 * x1[i]) << i;
  }
  std::vector<int64_t> total = {1, -2, 3};
  const std::vector<int64_t> more = {10, 20, -30};
  functors::CpuSumInto(3, more.data(), total.data());
  EXPECT_EQ(total, (std::vector<int64_t>{11, 18, -27}));
}

// ---- broadcast reductions ----

TEST(BroadcastReducer, FoldsExactlyTheBroadcastElements) {
  // out [2, 3, 4] onto [1, 3, 1]: target j collects out (i, j, k) for all i, k.
  functors::BroadcastReducer reducer;
  ASSERT_TRUE(functors::MakeBroadcastReducer({1, 3, 1}, {2, 3, 4}, &reducer));
  EXPECT_EQ(reducer.target_count, 3);
  EXPECT_EQ(reducer.reduce_count, 8);
  for (int64_t j = 0; j < 3; ++j) {
    std::set<int64_t> got, want;
    for (int64_t r = 0; r < 8; ++r) got.insert(reducer.OutIndex(j, r));
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t k = 0; k < 4; ++k) want.insert(i * 12 + j * 4 + k);
    }
    EXPECT_EQ(got, want) << "target " << j;
  }
  // A full-shape target is the identity.
  ASSERT_TRUE(functors::MakeBroadcastReducer({2, 3}, {2, 3}, &reducer));
  EXPECT_EQ(reducer.reduce_count, 1);
  for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(reducer.OutIndex(t, 0), t);
  // Rank 0 (a scalar op): one element, nothing to reduce.
  ASSERT_TRUE(functors::MakeBroadcastReducer({}, {}, &reducer));
  EXPECT_EQ(reducer.target_count, 1);
  EXPECT_EQ(reducer.OutIndex(0, 0), 0);
  EXPECT_FALSE(functors::MakeBroadcastReducer({2, 3}, {2, 4}, &reducer));
  EXPECT_FALSE(functors::MakeBroadcastReducer({3}, {2, 3}, &reducer));
  EXPECT_FALSE(functors::MakeBroadcastReducer(std::vector<int64_t>(9, 1),
                                              std::vector<int64_t>(9, 1), &reducer));
}

TEST(BroadcastReducer, SumReduceLikeMatchesNestedLoops) {
  // A [2, 3, 4, 5] summed onto B's legacy plan shape [1, 3, 4, 1].
  const std::vector<int64_t> out = {2, 3, 4, 5};
  std::vector<double> a(120);
  for (int i = 0; i < 120; ++i) a[i] = 0.5 * i - 7.0;
  functors::BroadcastReducer reducer;
  ASSERT_TRUE(functors::MakeBroadcastReducer({1, 3, 4, 1}, out, &reducer));
  std::vector<double> c(12);
  functors::CpuReduceToShape(reducer, functors::ValueAt<double>{a.data()}, c.data());
  for (int j = 0; j < 3; ++j) {
    for (int k = 0; k < 4; ++k) {
      double want = 0;
      for (int i = 0; i < 2; ++i) {
        for (int m = 0; m < 5; ++m) want += a[((i * 3 + j) * 4 + k) * 5 + m];
      }
      EXPECT_EQ(c[j * 4 + k], want) << j << "," << k;
    }
  }
}

// A [2, 3, 4] op B [3, 1] (numpy: B padded to [1, 3, 1]); the gradients
// summed by hand over i, k for B.
TEST(BinaryGradientFunctors, BroadcastGradientsMatchNestedLoops) {
  const std::vector<int64_t> a_dims = {2, 3, 4}, b_dims = {1, 3, 1}, out = {2, 3, 4};
  std::vector<double> a(24), b(3), dc(24), c(24);
  for (int i = 0; i < 24; ++i) {
    a[i] = 0.3 * i - 2.0;
    dc[i] = std::cos(static_cast<double>(i));
  }
  b = {1.5, -0.75, 2.25};
  auto at = [](int i, int j, int k) { return (i * 3 + j) * 4 + k; };
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) c[at(i, j, k)] = a[at(i, j, k)] / b[j];
    }
  }
  functors::BroadcastIndexMapper mapper;
  ASSERT_TRUE(functors::MakeBroadcastIndexMapper(a_dims, b_dims, out, &mapper));
  functors::BroadcastReducer onto_a, onto_b;
  ASSERT_TRUE(functors::MakeBroadcastReducer(a_dims, out, &onto_a));
  ASSERT_TRUE(functors::MakeBroadcastReducer(b_dims, out, &onto_b));

  // The reference: (dA element, dB part) of output element (i, j, k).
  struct Case {
    const char* name;
    std::function<double(int, int, int)> da;
    std::function<double(int, int, int)> db_part;
  };
  const Case cases[] = {
      {"Add", [&](int i, int j, int k) { return dc[at(i, j, k)]; },
       [&](int i, int j, int k) { return dc[at(i, j, k)]; }},
      {"Sub", [&](int i, int j, int k) { return dc[at(i, j, k)]; },
       [&](int i, int j, int k) { return -dc[at(i, j, k)]; }},
      {"Mul", [&](int i, int j, int k) { return dc[at(i, j, k)] * b[j]; },
       [&](int i, int j, int k) { return dc[at(i, j, k)] * a[at(i, j, k)]; }},
      {"Div", [&](int i, int j, int k) { return dc[at(i, j, k)] / b[j]; },
       [&](int i, int j, int k) { return -dc[at(i, j, k)] * a[at(i, j, k)] / (b[j] * b[j]); }},
  };
  for (const Case& test : cases) {
    std::vector<double> da(24), db(3);
    const std::string name = test.name;
    auto run = [&](auto gradient) {
      using F = decltype(gradient);
      // Only the inputs the functor reads are given, as the ops do.
      const double* a_in = F::kNeedsA ? a.data() : nullptr;
      const double* b_in = F::kNeedsB ? b.data() : nullptr;
      const double* c_in = F::kNeedsC ? c.data() : nullptr;
      functors::CpuReduceToShape(
          onto_a, functors::BinaryGradientPart<F, double>{gradient, mapper, dc.data(), a_in, b_in,
                                                          c_in, 0},
          da.data());
      functors::CpuReduceToShape(
          onto_b, functors::BinaryGradientPart<F, double>{gradient, mapper, dc.data(), a_in, b_in,
                                                          c_in, 1},
          db.data());
    };
    if (name == "Add") run(functors::AddGradient{});
    if (name == "Sub") run(functors::SubGradient{});
    if (name == "Mul") run(functors::MulGradient{});
    if (name == "Div") run(functors::DivGradient{});
    for (int j = 0; j < 3; ++j) {
      double want_db = 0;
      for (int i = 0; i < 2; ++i) {
        for (int k = 0; k < 4; ++k) {
          EXPECT_NEAR(da[at(i, j, k)], test.da(i, j, k), 1e-12) << name;
          want_db += test.db_part(i, j, k);
        }
      }
      EXPECT_NEAR(db[j], want_db, 1e-12) << name << " dB[" << j << "]";
    }
  }
}

}  // namespace
}  // namespace doppio
