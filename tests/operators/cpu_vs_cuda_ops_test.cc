// CPU vs CUDA, in C++, for the ops a data-parallel model places on the GPU
// besides its layers (SoftmaxWithLoss, AveragedLoss, Scale, Sum,
// WeightedSum, the broadcasting binary gradients, SumReduceLike) and the
// update ops reading a host learning rate: each op runs on the CPU and on
// GPU 0 from the same inputs, and the outputs must agree. The Python
// harness (cpu_vs_cuda_loss_test.py) covers the same ops through the
// pybind module; this binary needs no Python, so it also runs where only a
// GPU driver is installed.
//
// Without a GPU every test skips with the reason; with DOPPIO_REQUIRE_GPU=1
// (tools/gpu_selftest.sh) it fails instead.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "tests/operators/cpu_vs_cuda_util.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::IntArg;
using testing::MakeOp;
using namespace cpu_vs_cuda;

// Relative, for float32 results whose CPU and CUDA summation orders differ.
constexpr double kTolerance = 1e-5;

// ---- SoftmaxWithLoss ----

// `weight_dims`: one weight per sample (per row, or per pixel with
// spatial=1); empty for no weights.
template <typename T>
void CheckSoftmaxWithLoss(const std::vector<int64_t>& x_dims, const Feed& labels,
                          const std::vector<Argument>& args,
                          const std::vector<int64_t>& weight_dims = {}) {
  const Feed x = Make<T>("X", x_dims, Values<T>(Count(x_dims), 3.0, 1));
  std::vector<Feed> feeds = {x, labels};
  std::vector<std::string> names = {"X", "labels"};
  if (!weight_dims.empty()) {
    std::vector<T> w = Values<T>(Count(weight_dims), 1.0, 2);
    for (T& v : w) v = std::fabs(v);
    feeds.push_back(Make<T>("w", weight_dims, w));
    names.push_back("w");
  }
  const OperatorDef forward = MakeOp("SoftmaxWithLoss", names, {"P", "loss"}, args);
  const std::vector<Fetched> cpu = RunOn(forward, feeds, false);
  ExpectCpuEqualsCuda(forward, feeds, kTolerance);
  // The gradient from the CPU's softmax.
  std::vector<T> p;
  for (double v : cpu[0].values) p.push_back(static_cast<T>(v));
  feeds.push_back(Make<T>("P", x_dims, p));
  feeds.push_back(Make<T>("d_loss", {}, std::vector<T>{T(1.5)}));
  names.push_back("P");
  names.push_back("d_loss");
  ExpectCpuEqualsCuda(MakeOp("SoftmaxWithLossGradient", names, {"dX"}, args), feeds, kTolerance);
}

TEST(CpuVsCuda, SoftmaxWithLossRows) {
  SKIP_WITHOUT_GPU();
  const Feed labels = Make<int32_t>("labels", {64}, [] {
    std::vector<int32_t> l(64);
    for (int i = 0; i < 64; ++i) l[i] = (i * 7) % 10;
    return l;
  }());
  CheckSoftmaxWithLoss<float>({64, 10}, labels, {});
  CheckSoftmaxWithLoss<double>({64, 10}, labels, {FloatArg("scale", 0.5f)}, {64});
  const Feed long_labels = Make<int64_t>("labels", {5, 1}, std::vector<int64_t>{0, 6, 3, 3, 1});
  CheckSoftmaxWithLoss<float>({5, 7}, long_labels, {}, {5});
  // Many rows: the block sum goes over more than one thread's worth.
  std::vector<int32_t> many(3000);
  for (int i = 0; i < 3000; ++i) many[i] = i % 4;
  CheckSoftmaxWithLoss<float>({3000, 4}, Make<int32_t>("labels", {3000}, many), {});
}

TEST(CpuVsCuda, SoftmaxWithLossProbabilitiesAndSpatial) {
  SKIP_WITHOUT_GPU();
  std::vector<float> probs(5 * 7);
  for (int r = 0; r < 5; ++r) {
    float total = 0;
    for (int c = 0; c < 7; ++c) total += (probs[r * 7 + c] = static_cast<float>(1 + (r + c) % 3));
    for (int c = 0; c < 7; ++c) probs[r * 7 + c] /= total;
  }
  CheckSoftmaxWithLoss<float>({5, 7}, Make<float>("labels", {5, 7}, probs),
                              {IntArg("label_prob", 1)}, {5});
  std::vector<int32_t> pixels(2 * 4 * 5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<int32_t>(i % 4) - 1;
  CheckSoftmaxWithLoss<float>({2, 3, 4, 5}, Make<int32_t>("labels", {2, 4, 5}, pixels),
                              {IntArg("spatial", 1)}, {2, 4, 5});
  CheckSoftmaxWithLoss<double>({2, 3, 4}, Make<int32_t>("labels", {2, 3}, {0, 3, 1, 2, 2, 0}),
                               {IntArg("axis", 2)});
}

TEST(CpuVsCuda, SoftmaxWithLossBadLabelIsNanNotACrash) {
  SKIP_WITHOUT_GPU();
  const std::vector<Feed> feeds = {Make<float>("X", {3, 4}, Values<float>(12, 1.0, 3)),
                                   Make<int32_t>("labels", {3}, {0, 4, 1})};
  const OperatorDef forward = MakeOp("SoftmaxWithLoss", {"X", "labels"}, {"P", "loss"});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { RunOn(forward, feeds, false); }), "outside [0, 4)");
  const std::vector<Fetched> gpu = RunOn(forward, feeds, true);
  EXPECT_TRUE(std::isnan(gpu[1].values.at(0)));
  // Host labels are refused with the op's name, not read from the device.
  std::vector<Feed> host_labels = feeds;
  host_labels[1].host_only = true;
  EXPECT_MESSAGE_HAS(ErrorOf([&] { RunOn(forward, host_labels, true); }), "SoftmaxWithLoss",
                     "labels", "not a CUDA tensor");
}

// ---- AveragedLoss, Scale, Sum, WeightedSum ----

TEST(CpuVsCuda, AveragedLossAndGradient) {
  SKIP_WITHOUT_GPU();
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{7}, std::vector<int64_t>{30, 40, 5}, std::vector<int64_t>{0}}) {
    const std::vector<Feed> feeds = {Make<float>("X", dims, Values<float>(Count(dims), 2.0, 4)),
                                     Make<float>("dY", {}, {0.75f})};
    ExpectCpuEqualsCuda(MakeOp("AveragedLoss", {"X"}, {"Y"}), feeds, kTolerance);
    ExpectCpuEqualsCuda(MakeOp("AveragedLossGradient", {"X", "dY"}, {"dX"}), feeds, kTolerance);
  }
}

TEST(CpuVsCuda, ConvOnAnEmptyBatchGivesAnEmptyFloatOutput) {
  SKIP_WITHOUT_GPU();
  const std::vector<Feed> feeds = {
      Make<float>("X", {0, 2, 5, 5}, std::vector<float>{}),
      Make<float>("W", {3, 2, 3, 3}, Values<float>(54, 1.0, 8)),
      Make<float>("b", {3}, Values<float>(3, 1.0, 9)),
  };
  const std::vector<Fetched> y = ExpectCpuEqualsCuda(
      MakeOp("Conv", {"X", "W", "b"}, {"Y"}, {IntArg("kernel", 3), IntArg("pad", 1)}), feeds,
      kTolerance);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dims, (std::vector<int64_t>{0, 3, 5, 5}));
}

TEST(CpuVsCuda, ScaleSumAndWeightedSum) {
  SKIP_WITHOUT_GPU();
  const std::vector<Feed> feeds = {
      Make<float>("a", {6, 9}, Values<float>(54, 2.0, 5)),
      Make<float>("b", {6, 9}, Values<float>(54, 2.0, 6)),
      Make<float>("c", {6, 9}, Values<float>(54, 2.0, 7)),
      Make<float>("w0", {1}, {0.5f}),
      Make<float>("w1", {1}, {-2.0f}),
      Make<float>("lr", {1}, {-0.05f}, /*host_only=*/true),
  };
  ExpectCpuEqualsCuda(MakeOp("Scale", {"a"}, {"y"}, {FloatArg("scale", 0.1f)}), feeds, kTolerance);
  ExpectCpuEqualsCuda(MakeOp("Scale", {"a"}, {"a"}, {FloatArg("scale", -3.0f)}), feeds, kTolerance);
  ExpectCpuEqualsCuda(MakeOp("Sum", {"a", "b", "c"}, {"y"}), feeds, kTolerance);
  ExpectCpuEqualsCuda(MakeOp("Sum", {"a", "b"}, {"a"}), feeds, kTolerance);
  ExpectCpuEqualsCuda(MakeOp("Sum", {"a", "a"}, {"y"}), feeds, kTolerance);
  ExpectCpuEqualsCuda(MakeOp("WeightedSum", {"a", "w0", "b", "w1"}, {"y"}), feeds, kTolerance);
  // build_sgd without momentum: param = param * ONE + grad * lr (host lr).
  ExpectCpuEqualsCuda(MakeOp("WeightedSum", {"a", "w0", "b", "lr"}, {"a"}), feeds, kTolerance);
  const std::vector<Feed> ints = {Make<int64_t>("a", {3}, {1, -2, 3}),
                                  Make<int64_t>("b", {3}, {10, 20, -30})};
  const std::vector<Fetched> sum =
      ExpectCpuEqualsCuda(MakeOp("Sum", {"a", "b"}, {"y"}), ints, kTolerance);
  EXPECT_EQ(sum[0].values, (std::vector<double>{11, 18, -27}));
}

// ---- binary gradients and SumReduceLike ----

struct BroadcastCase {
  std::vector<int64_t> a, b;
  std::vector<Argument> args;
};

TEST(CpuVsCuda, BinaryGradientsWithBroadcasting) {
  SKIP_WITHOUT_GPU();
  const std::vector<BroadcastCase> cases = {
      {{2, 3, 4}, {2, 3, 4}, {}},
      {{2, 3, 4}, {3, 1}, {}},
      {{1, 3, 1, 5}, {4, 1, 2, 1}, {}},
      {{64, 10}, {10}, {}},
      {{300, 200}, {1}, {}},
      {{2, 3, 4, 5}, {3, 4}, {IntArg("broadcast", 1), IntArg("axis", 1)}},
      {{2, 3}, {}, {}},
  };
  for (const BroadcastCase& c : cases) {
    std::vector<double> a = Values<double>(Count(c.a), 1.0, 8), b = Values<double>(Count(c.b), 1.0, 9);
    for (double& v : a) v = 1.5 + v * 0.5;  // away from 0: Div
    for (double& v : b) v = 1.5 + v * 0.5;
    for (const std::string type : {"Add", "Sub", "Mul", "Div"}) {
      std::vector<Feed> feeds = {Make<double>("A", c.a, a), Make<double>("B", c.b, b)};
      const std::vector<Fetched> out =
          RunOn(MakeOp(type, {"A", "B"}, {"C"}, c.args), feeds, false);
      std::vector<double> dc = Values<double>(static_cast<int64_t>(out[0].values.size()), 1.0, 10);
      feeds.push_back(Make<double>("dC", out[0].dims, dc));
      feeds.push_back(Make<double>("C", out[0].dims, out[0].values));
      std::vector<std::string> inputs = {"dC", "A", "B"};
      if (type == "Div") inputs.push_back("C");
      SCOPED_TRACE(type + " " + ::testing::PrintToString(c.a) + " " +
                   ::testing::PrintToString(c.b));
      ExpectCpuEqualsCuda(MakeOp(type + "Gradient", inputs, {"dA", "dB"}, c.args), feeds, 1e-10);
      // dA over dC, in place.
      ExpectCpuEqualsCuda(MakeOp(type + "Gradient", inputs, {"dC", "dB"}, c.args), feeds, 1e-10);
    }
  }
}

TEST(CpuVsCuda, SumReduceLike) {
  SKIP_WITHOUT_GPU();
  const std::vector<BroadcastCase> cases = {
      {{2, 3, 4, 5}, {3, 4}, {IntArg("axis", 1)}},
      {{2, 3, 4, 5}, {4, 5}, {}},
      {{600, 70}, {1}, {}},
      {{6, 7}, {6, 7}, {}},
  };
  for (const BroadcastCase& c : cases) {
    const std::vector<Feed> feeds = {Make<float>("A", c.a, Values<float>(Count(c.a), 1.0, 11)),
                                     Make<float>("B", c.b, std::vector<float>(Count(c.b), 0.0f))};
    ExpectCpuEqualsCuda(MakeOp("SumReduceLike", {"A", "B"}, {"C"}, c.args), feeds, 1e-5);
  }
}

// ---- update ops with a host learning rate ----

TEST(CpuVsCuda, UpdatesTakeTheLearningRateFromTheHost) {
  SKIP_WITHOUT_GPU();
  for (bool host_lr : {true, false}) {
    SCOPED_TRACE(host_lr ? "host lr" : "device lr");
    const std::vector<Feed> feeds = {
        Make<float>("g", {50}, Values<float>(50, 1.0, 12)),
        Make<float>("m", {50}, Values<float>(50, 1.0, 13)),
        Make<float>("p", {50}, Values<float>(50, 1.0, 14)),
        Make<float>("m2", {50}, [] {
          std::vector<float> v = Values<float>(50, 1.0, 15);
          for (float& x : v) x = std::fabs(x);
          return v;
        }()),
        Make<float>("lr", {1}, {0.1f}, host_lr),
        Make<int64_t>("it", {1}, {4}, /*host_only=*/true),
    };
    for (int nesterov : {0, 1}) {
      const std::vector<Argument> args = {FloatArg("momentum", 0.9f), IntArg("nesterov", nesterov)};
      ExpectCpuEqualsCuda(MakeOp("MomentumSGDUpdate", {"g", "m", "lr", "p"}, {"g", "m", "p"}, args),
                          feeds, kTolerance);
      ExpectCpuEqualsCuda(MakeOp("MomentumSGD", {"g", "m", "lr"}, {"g", "m"}, args), feeds,
                          kTolerance);
    }
    ExpectCpuEqualsCuda(MakeOp("Adam", {"p", "m", "m2", "g", "lr", "it"}, {"p", "m", "m2"}),
                        feeds, kTolerance);
  }
}

}  // namespace
}  // namespace doppio
