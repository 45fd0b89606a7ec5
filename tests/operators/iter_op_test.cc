// The counter ops from C++: CreateMutex's blob round-trips through the
// serializers (so checkpoints holding it load), and AtomicIter stays exact
// when several threads share one counter.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/serialization.h"
#include "core/workspace.h"
#include "operators/iter_op.h"
#include "tests/operators/op_test_util.h"

namespace doppio {
namespace {

using testing::Feed;
using testing::Fetch;
using testing::MakeOp;

TEST(IterOpTest, MutexBlobSerializesAsCaffe2Does) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("CreateMutex", {}, {"mutex"}));
  const std::string bytes = SerializeBlobToString(*ws.GetBlob("mutex"), "mutex");
  BlobProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  EXPECT_EQ(proto.type(), "std::unique_ptr<std::mutex>");
  EXPECT_EQ(proto.name(), "mutex");
  Blob loaded;
  DeserializeBlob(proto, &loaded);
  ASSERT_TRUE(loaded.IsType<MutexPointer>());
  EXPECT_NE(loaded.Get<MutexPointer>(), nullptr);
}

TEST(IterOpTest, AtomicIterCountsEveryRunAcrossThreads) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("CreateMutex", {}, {"mutex"}));
  Feed<int64_t>(ws, "iter", {1}, {0});
  constexpr int kThreads = 4;
  constexpr int kRuns = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ws] {
      const OperatorDef def = MakeOp("AtomicIter", {"mutex", "iter"}, {"iter"});
      for (int i = 0; i < kRuns; ++i) ws.RunOperatorOnce(def);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(Fetch<int64_t>(ws, "iter"), std::vector<int64_t>{kThreads * kRuns});
}

// Caffe2 scripts make int32 counters (toy_regression_test does): the count
// goes on, as int64; a float counter stays an error.
TEST(IterOpTest, Int32CountersBecomeInt64AndKeepTheirValue) {
  Workspace ws;
  Feed<int32_t>(ws, "iter", {1}, {41});
  ws.RunOperatorOnce(MakeOp("Iter", {"iter"}, {"iter"}));
  EXPECT_EQ(Fetch<int64_t>(ws, "iter"), std::vector<int64_t>{42});
  ws.RunOperatorOnce(MakeOp("Iter", {"iter"}, {"iter"}));
  EXPECT_EQ(Fetch<int64_t>(ws, "iter"), std::vector<int64_t>{43});
  Feed<float>(ws, "f", {1}, {1.f});
  EXPECT_THROW(ws.RunOperatorOnce(MakeOp("Iter", {"f"}, {"f"})), Error);
}

}  // namespace
}  // namespace doppio
