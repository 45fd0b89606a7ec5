// Free empties the blobs it names and refuses to write anywhere else.
#include <gtest/gtest.h>

#include "core/enforce.h"
#include "core/workspace.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::Feed;
using testing::MakeOp;

TEST(FreeOpTest, EmptiesEveryNamedBlobAndLeavesOthers) {
  Workspace ws;
  Feed<float>(ws, "a", {2, 3}, {1, 2, 3, 4, 5, 6});
  Feed<float>(ws, "b", {1}, {7});
  Feed<float>(ws, "c", {1}, {8});
  ws.RunOperatorOnce(MakeOp("Free", {"a", "b"}, {"a", "b"}));
  ASSERT_TRUE(ws.HasBlob("a"));
  EXPECT_TRUE(ws.GetBlob("a")->IsEmpty());
  EXPECT_TRUE(ws.GetBlob("b")->IsEmpty());
  ASSERT_TRUE(ws.GetBlob("c")->IsTensor());
  EXPECT_EQ(ws.GetBlob("c")->GetTensor().numel(), 1);
  // A freed blob can be written again.
  ws.RunOperatorOnce(MakeOp("Relu", {"c"}, {"a"}));
  ASSERT_TRUE(ws.GetBlob("a")->IsTensor());
  EXPECT_EQ(ws.GetBlob("a")->GetTensor().data<float>()[0], 8.0f);
}

TEST(FreeOpTest, RefusesOutputsThatAreNotItsInputs) {
  Workspace ws;
  Feed<float>(ws, "a", {1}, {1});
  EXPECT_THROW(ws.RunOperatorOnce(MakeOp("Free", {"a"}, {"b"})), Error);
  EXPECT_THROW(ws.RunOperatorOnce(MakeOp("Free", {"a"}, {})), Error);
  EXPECT_FALSE(ws.GetBlob("a")->IsEmpty());
}

}  // namespace
}  // namespace doppio
