// The stream scheduling rules (core/event_schedule.h) on their own: which op
// records, which parent each op waits for and how, on small hand-made
// graphs whose answers are written out here; then the run-time scheduler
// over the fake device: waits skipped on a parent's own stream, drains, and
// the op a failure is blamed on.
#include "core/event_schedule.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/enforce.h"
#include "tests/core/fake_streams.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FakeStreamBackend;

// Backends PlanStreams only compares; it never asks them for events.
class NamedBackend final : public AsyncBackend {
 public:
  explicit NamedBackend(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  std::unique_ptr<AsyncEvent> CreateEvent(int) const override {
    DOPPIO_THROW("no events from backend ", name_);
  }

 private:
  const char* name_;
};

const NamedBackend kGpus("gpu");
const NamedBackend kOther("other");

StreamPlacement Host() { return {}; }
StreamPlacement Async(int device, const AsyncBackend* backend = &kGpus) {
  return {backend, device, true};
}
StreamPlacement HostSynced(int device) { return {&kGpus, device, false}; }

// "parent:H" / "parent:D" per wait, for compact expectations.
std::vector<std::string> Waits(const StreamPlan& plan, int op) {
  std::vector<std::string> waits;
  for (const ParentWait& wait : plan.waits[op]) {
    waits.push_back(std::to_string(wait.parent) + (wait.mode == WaitMode::kHost ? ":H" : ":D"));
  }
  return waits;
}

using Names = std::vector<std::string>;

TEST(PlanStreamsTest, FixedStreamsOneDeviceChainNeedsNoEvents) {
  const StreamPlan plan = PlanStreams({{}, {0}, {1}}, {Async(0), Async(0), Async(0)},
                                      /*fixed_streams=*/true);
  for (int op = 0; op < 3; ++op) {
    EXPECT_TRUE(plan.waits[op].empty()) << op;
    EXPECT_FALSE(plan.records[op]) << op;
    EXPECT_EQ(plan.device_of_op[op], 0);
  }
  ASSERT_EQ(plan.devices.size(), 1u);
}

TEST(PlanStreamsTest, CrossDeviceWaitsOnTheDeviceAndHostReadersOnTheHost) {
  // 0: gpu0, 1: gpu1 reads 0, 2: a CPU op reads 1, 3: gpu1 reads 2 and 1.
  const StreamPlan plan =
      PlanStreams({{}, {0}, {1}, {1, 2}}, {Async(0), Async(1), Host(), Async(1)}, true);
  EXPECT_EQ(Waits(plan, 1), Names({"0:D"}));
  EXPECT_EQ(Waits(plan, 2), Names({"1:H"}));
  // A host parent is done when it returns; 1 is on op 3's own stream.
  EXPECT_EQ(Waits(plan, 3), Names({}));
  EXPECT_EQ(plan.records, std::vector<bool>({true, true, false, false}));
  EXPECT_EQ(plan.device_of_op, std::vector<int>({0, 1, -1, 1}));
}

TEST(PlanStreamsTest, HostSyncedDeviceOpsAndOtherBackendsWaitOnTheHost) {
  const StreamPlan plan = PlanStreams({{}, {0}, {0}, {2}},
                                      {Async(0), HostSynced(0), Async(0, &kOther), Async(0)}, true);
  EXPECT_EQ(Waits(plan, 1), Names({"0:H"}));
  EXPECT_EQ(Waits(plan, 2), Names({"0:H"}));
  EXPECT_EQ(Waits(plan, 3), Names({"2:H"}));
  EXPECT_EQ(plan.records, std::vector<bool>({true, false, true, false}));
  // The same device number on two backends is two stream devices.
  EXPECT_EQ(plan.devices.size(), 2u);
  EXPECT_EQ(plan.device_of_op[1], 0);
}

TEST(PlanStreamsTest, WorkerStreamsMakeSameDeviceWaitsConditional) {
  const StreamPlan plan = PlanStreams({{}, {0}, {0, 1}}, {Async(0), Async(0), Host()},
                                      /*fixed_streams=*/false);
  EXPECT_EQ(Waits(plan, 1), Names({"0:D"}));
  EXPECT_EQ(Waits(plan, 2), Names({"0:H", "1:H"}));
  EXPECT_EQ(plan.records, std::vector<bool>({true, true, false}));
}

TEST(PlanStreamsTest, HostOnlyNetsPlanNothing) {
  const StreamPlan plan = PlanStreams({{}, {0}}, {Host(), Host()}, true);
  EXPECT_TRUE(plan.devices.empty());
  EXPECT_FALSE(StreamScheduler::AnyOnStreams({Host(), Host()}));
  EXPECT_TRUE(StreamScheduler::AnyOnStreams({Host(), HostSynced(0)}));
}

TEST(PlanStreamsTest, RejectsDependenciesThatDoNotPointBackwards) {
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       PlanStreams({{1}, {}}, {Async(0), Async(0)}, true);
                     }),
                     "depends on op 1");
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       PlanStreams({{}}, {Async(0), Async(0)}, true);
                     }),
                     "1 dependency lists for 2 ops");
}

std::string Describe(int op) { return "test op #" + std::to_string(op); }

// The scheduler with the fake backend: op bodies are queued by hand here.
class SchedulerTest : public ::testing::Test {
 protected:
  FakeStreamBackend backend_{/*max_jitter_us=*/0};
  StreamPlacement OnFake(int device) { return {&backend_, device, true}; }
};

TEST_F(SchedulerTest, WorkerStreamsWaitOnlyAcrossStreams) {
  StreamScheduler scheduler({{}, {0}, {0}}, {OnFake(1), OnFake(1), OnFake(1)},
                            /*streams_per_device=*/2, Describe);
  std::atomic<int> value{0};
  scheduler.BeginRun();
  scheduler.BeforeOp(0, 0);
  backend_.Enqueue(1, 0, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    value = 7;
  });
  scheduler.AfterOp(0, 0);
  int seen_on_same_stream = -1;
  int seen_on_other_stream = -1;
  scheduler.BeforeOp(1, 0);  // the parent's stream: no wait needed
  backend_.Enqueue(1, 0, [&] { seen_on_same_stream = value; });
  scheduler.AfterOp(1, 0);
  scheduler.BeforeOp(2, 1);  // another stream: waits for op 0's event
  backend_.Enqueue(1, 1, [&] { seen_on_other_stream = value; });
  scheduler.AfterOp(2, 1);
  scheduler.FinishRun(true);

  EXPECT_EQ(backend_.pending(), 0);
  EXPECT_EQ(seen_on_same_stream, 7);
  EXPECT_EQ(seen_on_other_stream, 7);
  const FakeStreamBackend::Counters counters = backend_.counters();
  EXPECT_EQ(counters.device_waits, 1);
  // Op 0 records (its successors may run on other streams); ops 1 and 2
  // have no successors. Plus one drain per used stream.
  EXPECT_EQ(counters.records, 1 + 2);
}

TEST_F(SchedulerTest, FailureIsBlamedOnTheFailingOpNotItsWaiters) {
  // 0 fails on stream 0; 1 (stream 1) waits for it and so fails as well;
  // 2 ran earlier on stream 1 and is fine.
  StreamScheduler scheduler({{}, {0}, {}}, {OnFake(1), OnFake(1), OnFake(1)}, 2, Describe);
  scheduler.BeginRun();
  scheduler.BeforeOp(2, 1);
  backend_.Enqueue(1, 1, [] {});
  scheduler.AfterOp(2, 1);
  scheduler.BeforeOp(0, 0);
  backend_.Enqueue(1, 0, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    DOPPIO_THROW("fake kernel fault");
  });
  scheduler.AfterOp(0, 0);
  scheduler.BeforeOp(1, 1);
  backend_.Enqueue(1, 1, [] {});
  scheduler.AfterOp(1, 1);
  const std::string message = ErrorOf([&] { scheduler.FinishRun(true); });
  EXPECT_MESSAGE_HAS(message, "fake kernel fault", "test op #0", "fake device 1 stream 0");
  EXPECT_EQ(message.find("test op #1"), std::string::npos) << message;
  EXPECT_EQ(backend_.pending(), 0);
}

TEST_F(SchedulerTest, UnrecordedOpsAreNamedAsCandidates) {
  // Fixed streams, one device: nothing records, so a failure can only be
  // placed among the ops that ran on the stream.
  StreamScheduler scheduler({{}, {0}}, {OnFake(2), OnFake(2)}, 1, Describe);
  scheduler.BeginRun();
  scheduler.BeforeOp(0, 0);
  backend_.Enqueue(2, 0, [] { DOPPIO_THROW("fake kernel fault"); });
  scheduler.AfterOp(0, 0);
  scheduler.BeforeOp(1, 0);
  backend_.Enqueue(2, 0, [] {});
  scheduler.AfterOp(1, 0);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { scheduler.FinishRun(true); }), "fake kernel fault",
                     "by one of:", "test op #0", "test op #1");
}

TEST_F(SchedulerTest, HostWaitFailureNamesTheParentAndUnreportedRunsStillDrain) {
  StreamScheduler scheduler({{}, {0}}, {OnFake(1), StreamPlacement()}, 1, Describe);
  scheduler.BeginRun();
  scheduler.BeforeOp(0, 0);
  backend_.Enqueue(1, 0, [] { DOPPIO_THROW("fake kernel fault"); });
  scheduler.AfterOp(0, 0);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { scheduler.BeforeOp(1, 0); }), "fake kernel fault",
                     "device work of test op #0", "waited for on the host");
  scheduler.FinishRun(/*report_failures=*/false);
  EXPECT_EQ(backend_.pending(), 0);
}

TEST_F(SchedulerTest, StreamIdsOutsideTheNetsWorkersAreRefused) {
  StreamScheduler scheduler({{}}, {OnFake(1)}, 2, Describe);
  scheduler.BeginRun();
  EXPECT_MESSAGE_HAS(ErrorOf([&] { scheduler.BeforeOp(0, 2); }), "stream 2 is out of range");
}

}  // namespace
}  // namespace doppio
