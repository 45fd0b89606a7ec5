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

}  // namespace
}  // namespace doppio
