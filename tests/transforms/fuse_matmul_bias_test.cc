// FuseMatMulBias: BatchMatMul(X, W) + Add(., b) becomes FCTransposed with
// axis -1, computing what the two ops computed (checked against them and
// against a loop written here) for X of rank 1 to 4; unsafe pairs stay.

#include "transforms/fuse_matmul_bias.h"

#include <gtest/gtest.h>

#include <random>

#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"

namespace doppio {
namespace testing {
namespace {

using transforms::FuseMatMulBias;

NetDef MatMulBiasNet(bool bias_first = false) {
  const std::vector<std::string> add_inputs =
      bias_first ? std::vector<std::string>{"b", "p"} : std::vector<std::string>{"p", "b"};
  return MakeNet("linear",
                 {MakeOp("BatchMatMul", {"x", "w"}, {"p"}, {IntArg("broadcast", 1)}),
                  MakeOp("Add", add_inputs, {"y"})},
                 {"y"});
}

TEST(FuseMatMulBiasTest, BecomesFCTransposedWithTheSameOutput) {
  std::mt19937 rng(3);
  const int64_t K = 6, N = 5;
  for (const std::vector<int64_t>& x_dims :
       std::vector<std::vector<int64_t>>{{K}, {4, K}, {2, 3, K}, {2, 3, 4, K}}) {
    for (const bool bias_first : {false, true}) {
      Workspace ws;
      FeedUniform(&ws, "x", x_dims, -1, 1, &rng);
      FeedUniform(&ws, "w", {K, N}, -1, 1, &rng);
      FeedUniform(&ws, "b", {N}, -1, 1, &rng);
      const NetDef net = MatMulBiasNet(bias_first);
      Workspace unfused_ws;
      CopyTensors(ws, &unfused_ws);
      unfused_ws.RunNetOnce(net);
      int fused = 0;
      const NetDef out = FuseMatMulBias(net, ws, &fused);
      EXPECT_EQ(fused, 1);
      ASSERT_EQ(out.op_size(), 1);
      EXPECT_EQ(out.op(0).type(), "FCTransposed");
      ws.RunNetOnce(out);
      EXPECT_EQ(ws.GetBlob("y")->GetTensor().dims(), unfused_ws.GetBlob("y")->GetTensor().dims());
      const std::vector<float> y = Values(ws, "y");
      EXPECT_LT(MaxRelativeDiff(y, Values(unfused_ws, "y")), 1e-5);
      const std::vector<float> x = Values(ws, "x"), w = Values(ws, "w"), b = Values(ws, "b");
      const int64_t rows = static_cast<int64_t>(x.size()) / K;
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          double sum = b[n];
          for (int64_t k = 0; k < K; ++k) sum += double(x[m * K + k]) * w[k * N + n];
          EXPECT_NEAR(y[m * N + n], sum, 1e-5);
        }
      }
      EXPECT_FALSE(ws.HasBlob("p"));
    }
  }
}

void ExpectUnchanged(const NetDef& net, const Workspace& ws) {
  int fused = 0;
  const NetDef out = FuseMatMulBias(net, ws, &fused);
  EXPECT_EQ(fused, 0);
  EXPECT_EQ(out.SerializeAsString(), net.SerializeAsString());
}

TEST(FuseMatMulBiasTest, LeavesUnsafePairsAlone) {
  std::mt19937 rng(4);
  Workspace ws;
  FeedUniform(&ws, "x", {3, 6}, -1, 1, &rng);
  FeedUniform(&ws, "w", {6, 5}, -1, 1, &rng);
  FeedUniform(&ws, "b", {5}, -1, 1, &rng);
  FeedUniform(&ws, "b2", {3, 5}, -1, 1, &rng);
  FeedUniform(&ws, "w3", {2, 6, 5}, -1, 1, &rng);
  // A bias that is not one value per output column.
  NetDef net = MatMulBiasNet();
  net.mutable_op(1)->set_input(1, "b2");
  ExpectUnchanged(net, ws);
  // A batched (3-D) weight.
  net = MatMulBiasNet();
  net.mutable_op(0)->set_input(1, "w3");
  ExpectUnchanged(net, ws);
  // A weight the net writes, or a bias it computes.
  net = MatMulBiasNet();
  *net.add_op() = MakeOp("Copy", {"x"}, {"w"});
  ExpectUnchanged(net, ws);
  // A transposed product.
  net = MatMulBiasNet();
  *net.mutable_op(0)->add_arg() = IntArg("trans_b", 1);
  ExpectUnchanged(net, ws);
  // The product has another reader, or is handed out.
  net = MatMulBiasNet();
  *net.add_op() = MakeOp("Copy", {"p"}, {"z"});
  ExpectUnchanged(net, ws);
  net = MatMulBiasNet();
  net.add_external_output("p");
  ExpectUnchanged(net, ws);
  // Caffe2's legacy broadcast along an axis.
  net = MatMulBiasNet();
  *net.mutable_op(1)->add_arg() = IntArg("axis", 1);
  ExpectUnchanged(net, ws);
  // Not on the CPU.
  net = MatMulBiasNet();
  net.mutable_op(0)->mutable_device_option()->set_device_type(1);
  ExpectUnchanged(net, ws);
}

}  // namespace
}  // namespace testing
}  // namespace doppio
