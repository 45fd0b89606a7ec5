// InplaceActivation: a dying input is overwritten by its activation and
// later readers follow the rename; anything observable stays as it was.

#include "transforms/inplace_activation.h"

#include <gtest/gtest.h>

#include <random>

#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"

namespace doppio {
namespace testing {
namespace {

using transforms::InplaceActivation;

TEST(InplaceActivationTest, RewritesADyingInputAndRenamesLaterReaders) {
  std::mt19937 rng(1);
  Workspace ws;
  FeedUniform(&ws, "x", {4, 6}, -1, 1, &rng);
  const NetDef net = MakeNet(
      "chain", {MakeOp("Scale", {"x"}, {"a"}, {FloatArg("scale", 2.0f)}),
                MakeOp("Relu", {"a"}, {"b"}), MakeOp("Sigmoid", {"b"}, {"c"}),
                MakeOp("Scale", {"c"}, {"d"}, {FloatArg("scale", 3.0f)})},
      {"d"});
  int rewritten = 0;
  const NetDef out = InplaceActivation(net, &rewritten);
  EXPECT_EQ(rewritten, 2);
  EXPECT_EQ(out.op(1).output(0), "a");
  EXPECT_EQ(out.op(2).input(0), "a");
  EXPECT_EQ(out.op(2).output(0), "a");
  EXPECT_EQ(out.op(3).input(0), "a");
  ws.RunNetOnce(out);
  // d = 3 * sigmoid(relu(2 x)), written out here.
  const std::vector<float> x = Values(ws, "x"), d = Values(ws, "d");
  for (size_t i = 0; i < x.size(); ++i) {
    const double relu = std::max(2.0 * x[i], 0.0);
    EXPECT_NEAR(d[i], 3.0 / (1.0 + std::exp(-relu)), 1e-6);
  }
  EXPECT_FALSE(ws.HasBlob("b"));
  EXPECT_FALSE(ws.HasBlob("c"));
}

void ExpectUnchanged(const NetDef& net) {
  int rewritten = -1;
  const NetDef out = InplaceActivation(net, &rewritten);
  EXPECT_EQ(rewritten, 0);
  EXPECT_EQ(out.SerializeAsString(), net.SerializeAsString());
}

TEST(InplaceActivationTest, LeavesObservableBlobsAlone) {
  const OperatorDef make_a = MakeOp("Scale", {"x"}, {"a"});
  // The input is read again later.
  ExpectUnchanged(MakeNet("n", {make_a, MakeOp("Relu", {"a"}, {"b"}),
                                MakeOp("Add", {"a", "b"}, {"c"})}, {"c"}));
  // The input is an external output, or an external input (not produced here).
  ExpectUnchanged(MakeNet("n", {make_a, MakeOp("Relu", {"a"}, {"b"})}, {"a", "b"}));
  NetDef external_input =
      MakeNet("n", {MakeOp("Relu", {"x"}, {"b"}), MakeOp("Scale", {"b"}, {"c"})}, {"c"});
  external_input.add_external_input("x");
  ExpectUnchanged(external_input);
  // The output is an external output.
  ExpectUnchanged(MakeNet("n", {make_a, MakeOp("Relu", {"a"}, {"b"})}, {"b"}));
  // The output is written again by another op.
  ExpectUnchanged(MakeNet("n", {make_a, MakeOp("Relu", {"a"}, {"b"}),
                                MakeOp("Scale", {"b"}, {"b"})}, {}));
  // Not an elementwise activation.
  ExpectUnchanged(MakeNet("n", {make_a, MakeOp("Softmax", {"a"}, {"b"}),
                                MakeOp("Scale", {"b"}, {"c"})}, {"c"}));
}

}  // namespace
}  // namespace testing
}  // namespace doppio
