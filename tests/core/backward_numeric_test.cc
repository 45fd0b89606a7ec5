// Whole-net checks of the backward pass: the gradient ops it emits, run in a
// Workspace after the forward net, must agree with central finite
// differences of the (summed) losses, computed by re-running the forward net
// with each parameter element nudged. The ops are float32, so the step and
// tolerances are sized for float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/backward.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::FloatArg;
using testing::MakeOp;

struct Feed {
  std::vector<int64_t> dims;
  std::vector<float> floats;   // used when ints is empty
  std::vector<int32_t> ints;
};

void FeedBlob(Workspace* ws, const std::string& name, const Feed& feed) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize(feed.dims);
  if (!feed.ints.empty()) {
    int32_t* data = tensor->mutable_data<int32_t>();
    for (size_t i = 0; i < feed.ints.size(); ++i) data[i] = feed.ints[i];
  } else {
    float* data = tensor->mutable_data<float>();
    for (size_t i = 0; i < feed.floats.size(); ++i) data[i] = feed.floats[i];
  }
}

std::vector<float> Floats(const Workspace& ws, const std::string& name) {
  const Blob* blob = ws.GetBlob(name);
  EXPECT_NE(blob, nullptr) << "no blob " << name;
  if (blob == nullptr) return {};
  const Tensor& tensor = blob->GetTensor();
  return std::vector<float>(tensor.data<float>(), tensor.data<float>() + tensor.numel());
}

std::vector<int64_t> Indices(const Workspace& ws, const std::string& name) {
  const Tensor& tensor = ws.GetBlob(name)->GetTensor();
  std::vector<int64_t> out;
  if (tensor.dtype() == DataType::kInt32) {
    for (int64_t i = 0; i < tensor.numel(); ++i) out.push_back(tensor.data<int32_t>()[i]);
  } else {
    for (int64_t i = 0; i < tensor.numel(); ++i) out.push_back(tensor.data<int64_t>()[i]);
  }
  return out;
}

Feed Random(std::vector<int64_t> dims, std::mt19937* rng, float low = -1.0f, float high = 1.0f) {
  Feed feed{dims, {}, {}};
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::uniform_real_distribution<float> dist(low, high);
  for (int64_t i = 0; i < count; ++i) feed.floats.push_back(dist(*rng));
  return feed;
}

NetDef MakeNet(const std::vector<OperatorDef>& ops) {
  NetDef net;
  net.set_name("forward");
  for (const OperatorDef& op : ops) *net.add_op() = op;
  return net;
}

double TotalLoss(Workspace* ws, const NetDef& forward, const std::vector<std::string>& losses) {
  ws->RunNetOnce(forward);
  double total = 0;
  for (const std::string& loss : losses) {
    const std::vector<float> value = Floats(*ws, loss);
    EXPECT_EQ(value.size(), 1u) << loss;
    for (float v : value) total += v;
  }
  return total;
}

// The dense gradient of `param` as the gradient ops left it; a GradientSlice
// is scattered (rows added at their indices) into a dense tensor here.
std::vector<float> AnalyticGradient(const Workspace& ws, const GradientWrapper& grad,
                                    size_t param_size) {
  if (grad.IsDense()) return Floats(ws, grad.dense);
  std::vector<float> dense(param_size, 0.0f);
  const std::vector<int64_t> indices = Indices(ws, grad.indices);
  const std::vector<float> values = Floats(ws, grad.values);
  if (indices.empty()) return dense;
  const size_t row = values.size() / indices.size();
  for (size_t k = 0; k < indices.size(); ++k) {
    for (size_t j = 0; j < row; ++j) dense[indices[k] * row + j] += values[k * row + j];
  }
  return dense;
}

void CheckAgainstFiniteDifferences(const NetDef& forward, const std::map<std::string, Feed>& feeds,
                                   const std::vector<std::string>& losses,
                                   const std::vector<std::string>& params,
                                   float step = 5e-3f, float atol = 2e-3f, float rtol = 2e-2f) {
  const BackwardResult backward = AddGradientOperators(forward, losses);
  NetDef gradient_net;
  gradient_net.set_name("backward");
  for (const OperatorDef& op : backward.ops) *gradient_net.add_op() = op;

  Workspace ws;
  for (const auto& feed : feeds) FeedBlob(&ws, feed.first, feed.second);
  ws.RunNetOnce(forward);
  ws.RunNetOnce(gradient_net);

  for (const std::string& param : params) {
    auto it = backward.gradients.find(param);
    ASSERT_NE(it, backward.gradients.end()) << "no gradient for " << param;
    std::vector<float> values = feeds.at(param).floats;
    const std::vector<float> analytic = AnalyticGradient(ws, it->second, values.size());
    ASSERT_EQ(analytic.size(), values.size()) << param;
    for (size_t i = 0; i < values.size(); ++i) {
      Feed nudged = feeds.at(param);
      nudged.floats[i] = values[i] + step;
      FeedBlob(&ws, param, nudged);
      const double plus = TotalLoss(&ws, forward, losses);
      nudged.floats[i] = values[i] - step;
      FeedBlob(&ws, param, nudged);
      const double minus = TotalLoss(&ws, forward, losses);
      const double numeric = (plus - minus) / (2.0 * step);
      EXPECT_NEAR(analytic[i], numeric, atol + rtol * std::fabs(numeric))
          << "d(loss)/d(" << param << "[" << i << "])";
    }
    FeedBlob(&ws, param, feeds.at(param));
  }
}

TEST(BackwardNumericTest, MlpWithInPlaceReluAndSoftmaxLoss) {
  std::mt19937 rng(7);
  std::map<std::string, Feed> feeds;
  feeds["x"] = Random({4, 5}, &rng);
  feeds["w1"] = Random({6, 5}, &rng);
  feeds["b1"] = Random({6}, &rng);
  feeds["w2"] = Random({3, 6}, &rng);
  feeds["b2"] = Random({3}, &rng);
  feeds["label"] = Feed{{4}, {}, {0, 2, 1, 2}};
  const NetDef net = MakeNet({MakeOp("FC", {"x", "w1", "b1"}, {"h"}),
                              MakeOp("Relu", {"h"}, {"h"}),
                              MakeOp("FC", {"h", "w2", "b2"}, {"logits"}),
                              MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"softmax", "xent"}),
                              MakeOp("AveragedLoss", {"xent"}, {"loss"})});
  CheckAgainstFiniteDifferences(net, feeds, {"loss"}, {"w1", "b1", "w2", "b2", "x"});
}

TEST(BackwardNumericTest, FanOutAndTwoLosses) {
  // h is read by Tanh, Mul, Add and Sum (which hands its gradient through
  // without an op); t is read by two Muls (one with t twice) and a loss.
  std::mt19937 rng(11);
  std::map<std::string, Feed> feeds;
  feeds["x"] = Random({3, 4}, &rng);
  feeds["w"] = Random({5, 4}, &rng);
  feeds["b"] = Random({5}, &rng);
  const NetDef net = MakeNet({MakeOp("FC", {"x", "w", "b"}, {"h"}),
                              MakeOp("Tanh", {"h"}, {"t"}),
                              MakeOp("Mul", {"t", "h"}, {"m"}),
                              MakeOp("Add", {"m", "h"}, {"a"}),
                              MakeOp("Mul", {"t", "t"}, {"tt"}),
                              MakeOp("Sum", {"a", "tt", "h"}, {"u"}),
                              MakeOp("Sigmoid", {"u"}, {"s"}),
                              MakeOp("AveragedLoss", {"s"}, {"loss"}),
                              MakeOp("AveragedLoss", {"t"}, {"loss2"})});
  CheckAgainstFiniteDifferences(net, feeds, {"loss", "loss2"}, {"w", "b", "x"});
}

TEST(BackwardNumericTest, InPlaceChainWithFanOutOfTheLastVersion) {
  std::mt19937 rng(5);
  std::map<std::string, Feed> feeds;
  feeds["x"] = Random({3, 4}, &rng);
  feeds["w"] = Random({4, 4}, &rng);
  feeds["b"] = Random({4}, &rng);
  const NetDef net = MakeNet({MakeOp("FC", {"x", "w", "b"}, {"h"}),
                              MakeOp("Scale", {"h"}, {"h"}, {FloatArg("scale", 0.5f)}),
                              MakeOp("Relu", {"h"}, {"h"}),
                              MakeOp("Sigmoid", {"h"}, {"s"}),
                              MakeOp("Mul", {"s", "h"}, {"m"}),
                              MakeOp("AveragedLoss", {"m"}, {"loss"})});
  CheckAgainstFiniteDifferences(net, feeds, {"loss"}, {"w", "b", "x"});
}

TEST(BackwardNumericTest, SparseEmbeddingReadTwice) {
  // Repeated indices, within and across the two Gathers, must add up.
  std::mt19937 rng(3);
  std::map<std::string, Feed> feeds;
  feeds["emb"] = Random({6, 3}, &rng);
  feeds["idx1"] = Feed{{4}, {}, {0, 2, 2, 5}};
  feeds["idx2"] = Feed{{4}, {}, {1, 2, 0, 0}};
  const NetDef net = MakeNet({MakeOp("Gather", {"emb", "idx1"}, {"r1"}),
                              MakeOp("Gather", {"emb", "idx2"}, {"r2"}),
                              MakeOp("Mul", {"r1", "r2"}, {"m"}),
                              MakeOp("Tanh", {"m"}, {"t"}),
                              MakeOp("AveragedLoss", {"t"}, {"loss"})});
  const BackwardResult backward = AddGradientOperators(net, {"loss"});
  ASSERT_TRUE(backward.gradients.at("emb").IsSparse());
  CheckAgainstFiniteDifferences(net, feeds, {"loss"}, {"emb"});
}

TEST(BackwardNumericTest, SparseEmbeddingIntoSoftmaxClassifier) {
  std::mt19937 rng(9);
  std::map<std::string, Feed> feeds;
  feeds["emb"] = Random({5, 4}, &rng);
  feeds["idx"] = Feed{{3}, {}, {4, 1, 4}};
  feeds["w"] = Random({3, 4}, &rng);
  feeds["b"] = Random({3}, &rng);
  feeds["label"] = Feed{{3}, {}, {2, 0, 1}};
  const NetDef net = MakeNet({MakeOp("Gather", {"emb", "idx"}, {"rows"}),
                              MakeOp("FC", {"rows", "w", "b"}, {"logits"}),
                              MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"softmax", "loss"})});
  CheckAgainstFiniteDifferences(net, feeds, {"loss"}, {"emb", "w", "b"});
}

}  // namespace
}  // namespace doppio
