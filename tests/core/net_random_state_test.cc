// A net's random generators saved and restored (core/net.h): a restored
// net draws the numbers the original draws next; bad states are refused.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/net.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;

NetDef DropoutNet() {
  NetDef net;
  net.set_name("dropout");
  OperatorDef fill = MakeOp("ConstantFill", {}, {"x"},
                            {IntsArg("shape", {64}), FloatArg("value", 1.0f)});
  *net.add_op() = fill;
  OperatorDef dropout = MakeOp("Dropout", {"x"}, {"y", "mask"},
                               {FloatArg("ratio", 0.5f), IntArg("is_test", 0)});
  dropout.mutable_device_option()->set_random_seed(5);
  *net.add_op() = dropout;
  return net;
}

std::vector<float> RunOnce(Workspace& ws) {
  ws.RunNet("dropout");
  const Tensor& y = ws.GetBlob("y")->GetTensor();
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

TEST(NetRandomStateTest, ARestoredNetDrawsWhatTheOriginalDrawsNext) {
  Workspace original;
  NetBase* net = original.CreateNet(DropoutNet());
  const std::vector<std::string> fresh = NetRandomStates(*net);
  ASSERT_EQ(fresh.size(), 2u);
  EXPECT_TRUE(fresh[0].empty() && fresh[1].empty()) << "no op has drawn yet";
  RunOnce(original);
  RunOnce(original);
  const std::vector<std::string> saved = NetRandomStates(*net);
  EXPECT_TRUE(saved[0].empty());   // ConstantFill draws nothing
  EXPECT_FALSE(saved[1].empty());  // Dropout does
  const std::vector<float> third = RunOnce(original);
  const std::vector<float> fourth = RunOnce(original);
  EXPECT_NE(third, fourth);

  Workspace resumed;
  NetBase* copy = resumed.CreateNet(DropoutNet());
  const std::vector<float> unrestored = RunOnce(resumed);
  SetNetRandomStates(copy, saved);
  EXPECT_EQ(RunOnce(resumed), third);
  EXPECT_EQ(RunOnce(resumed), fourth);
  EXPECT_NE(unrestored, third);  // the seed alone would start over

  // An empty state forgets the generator: the op seeds a new one.
  Workspace again;
  NetBase* another = again.CreateNet(DropoutNet());
  SetNetRandomStates(another, fresh);
  EXPECT_EQ(RunOnce(again), unrestored);
}

TEST(NetRandomStateTest, StatesOfAnotherShapeOrNotAStateAreRefused) {
  Workspace ws;
  NetBase* net = ws.CreateNet(DropoutNet());
  RunOnce(ws);
  const std::vector<std::string> before = NetRandomStates(*net);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { SetNetRandomStates(net, {""}); }), "net 'dropout' has 2 ops",
                     "states are of 1");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { SetNetRandomStates(net, {"", "not a state"}); }),
                     "not a random generator state", "op 1 (Dropout) of net 'dropout'");
  EXPECT_EQ(NetRandomStates(*net), before) << "nothing changed";
}

}  // namespace
}  // namespace doppio
