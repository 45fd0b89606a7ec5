// Observers under the dag executor (serialized, one call per op, on the
// worker that ran it) and NetProfiler: per-op and per-run timing, the
// per-type report and the chrome://tracing JSON of one run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/gradient.h"
#include "core/net_trace.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;

// Sleeps `ms` milliseconds; writes 0 into its outputs.
class TraceSleepOp final : public Operator<CPUContext> {
 public:
  TraceSleepOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws), ms_(GetSingleArgument<int>("ms", 0)) {}
  void RunOnDevice() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    for (int j = 0; j < OutputSize(); ++j) {
      Output(j)->Resize({1});
      Output(j)->mutable_data<int64_t>()[0] = 0;
    }
  }

 private:
  int ms_;
};
OPERATOR_SCHEMA(TraceTestSleep).NumInputs(0, 4).NumOutputs(0, 4).AllowAnyInplace();
REGISTER_CPU_OPERATOR(TraceTestSleep, TraceSleepOp);
NO_GRADIENT(TraceTestSleep, "test-only op");

OperatorDef SleepOn(const std::string& name, int ms, int device,
                    const std::vector<std::string>& inputs = {},
                    const std::vector<std::string>& outputs = {}) {
  OperatorDef op = MakeOp("TraceTestSleep", inputs, outputs, {IntArg("ms", ms)});
  op.set_name(name);
  op.mutable_device_option()->set_cuda_gpu_id(device);
  return op;
}

NetDef Net(const std::string& name, const std::string& type,
           const std::vector<OperatorDef>& ops, int workers = 1) {
  NetDef net;
  net.set_name(name);
  net.set_type(type);
  for (const OperatorDef& op : ops) *net.add_op() = op;
  *net.add_arg() = IntArg("num_workers", workers);
  return net;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

TEST(NetObserverTest, DagCallsAreSerializedOncePerOpOnTheRunningWorker) {
  std::vector<OperatorDef> ops;
  for (int i = 0; i < 40; ++i) ops.push_back(SleepOn("op" + std::to_string(i), 1, i % 2));
  Workspace ws;
  NetBase* net = ws.CreateNet(Net("observed", "dag", ops, 4));
  std::atomic<bool> inside{false};
  std::atomic<int> overlapping_calls{0};
  std::vector<int> seen;
  std::set<std::thread::id> threads;
  net->SetOpObserver([&](int index, const OperatorBase& op, double seconds) {
    if (inside.exchange(true)) ++overlapping_calls;
    // Widen the window in which an unserialized second call would overlap.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    seen.push_back(index);
    threads.insert(std::this_thread::get_id());
    EXPECT_EQ(op.def().name(), "op" + std::to_string(index));
    EXPECT_GE(seconds, 0.001);
    inside = false;
  });
  for (int run = 0; run < 3; ++run) net->Run();
  EXPECT_EQ(overlapping_calls.load(), 0);
  ASSERT_EQ(seen.size(), 120u);
  std::multiset<int> indices(seen.begin(), seen.end());
  for (int i = 0; i < 40; ++i) EXPECT_EQ(indices.count(i), 3u) << "op " << i;
  EXPECT_GT(threads.size(), 1u) << "the observer should run on the workers";
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);

  // Removing it stops the calls.
  net->SetOpObserver(nullptr);
  net->Run();
  EXPECT_EQ(seen.size(), 120u);
}

TEST(NetProfilerTest, TimesOpsAndRunsAndReportsPerType) {
  Workspace ws;
  NetBase* net = ws.CreateNet(Net("timed", "simple", {SleepOn("a", 20, 0), SleepOn("b", 5, 0)}));
  NetProfiler profiler(net);
  profiler.Run(3);
  EXPECT_EQ(profiler.runs(), 3);
  ASSERT_EQ(profiler.op_seconds().size(), 2u);
  EXPECT_GE(profiler.op_seconds()[0], 0.060);
  EXPECT_LT(profiler.op_seconds()[0], 0.5);
  EXPECT_GE(profiler.op_seconds()[1], 0.015);
  EXPECT_GE(profiler.net_seconds(), profiler.op_seconds()[0] + profiler.op_seconds()[1]);
  const std::string report = profiler.PerOpTypeReport();
  EXPECT_MESSAGE_HAS(report, "3 run(s) of net 'timed'", "TraceTestSleep", "(all ops)",
                     "(whole runs)");
  // Simple nets run ops on the caller.
  ASSERT_EQ(profiler.last_run_events().size(), 2u);
  EXPECT_EQ(profiler.last_run_events()[0].thread, "caller");
  EXPECT_LE(profiler.last_run_events()[0].start_us + profiler.last_run_events()[0].duration_us,
            profiler.last_run_events()[1].start_us + 1.0);
}

TEST(NetProfilerTest, ChromeTraceOfADagRunShowsDevicesWorkersAndOverlap) {
  Workspace ws;
  NetBase* net = ws.CreateNet(Net(
      "traced", "dag",
      {SleepOn("left", 100, 0, {}, {"l"}), SleepOn("right", 100, 1), SleepOn("tail", 1, 0, {"l"})}));
  NetProfiler profiler(net);
  profiler.Run(2);
  const std::vector<OpTraceEvent>& events = profiler.last_run_events();
  ASSERT_EQ(events.size(), 3u);
  const OpTraceEvent* left = nullptr;
  const OpTraceEvent* right = nullptr;
  const OpTraceEvent* tail = nullptr;
  for (const OpTraceEvent& event : events) {
    if (event.name == "left") left = &event;
    if (event.name == "right") right = &event;
    if (event.name == "tail") tail = &event;
  }
  ASSERT_TRUE(left && right && tail);
  EXPECT_EQ(left->device, "cpu_0");
  EXPECT_EQ(right->device, "cpu_1");
  EXPECT_EQ(left->thread, "cpu_0/worker 0");
  EXPECT_EQ(right->thread, "cpu_1/worker 0");
  EXPECT_EQ(tail->thread, left->thread);
  EXPECT_EQ(left->type, "TraceTestSleep");
  EXPECT_GE(left->duration_us, 100000.0);
  EXPECT_GE(left->start_us, 0.0);
  // The two devices ran at the same time; tail came after its input.
  EXPECT_LT(right->start_us, left->start_us + left->duration_us);
  EXPECT_LT(left->start_us, right->start_us + right->duration_us);
  EXPECT_GE(tail->start_us, left->start_us + left->duration_us);
  EXPECT_GE(profiler.last_run_us(), 100000.0);
  EXPECT_LT(profiler.last_run_us(), 190000.0);

  const std::string json = profiler.ChromeTraceJson();
  EXPECT_EQ(Count(json, "\"ph\": \"X\""), 4u);  // three ops and the run
  EXPECT_EQ(Count(json, "\"ph\": \"M\""), 3u);  // caller and two workers
  EXPECT_MESSAGE_HAS(json, "\"traceEvents\"", "\"name\": \"left\"", "\"cat\": \"TraceTestSleep\"",
                     "\"device\": \"cpu_1\"", "\"thread\": \"cpu_1/worker 0\"",
                     "\"name\": \"net traced\"", "\"dur\": ");
  EXPECT_EQ(Count(json, "{"), Count(json, "}"));
  EXPECT_EQ(Count(json, "["), Count(json, "]"));
}

TEST(NetProfilerTest, WriteChromeTraceWritesTheFileOrNamesIt) {
  Workspace ws;
  NetBase* net = ws.CreateNet(Net("to_file", "dag", {SleepOn("only", 1, 0)}));
  const std::string path = testing::TempDir("trace") + "/run.json";
  WriteChromeTrace(net, path);
  const std::string json = testing::ReadBytes(path);
  EXPECT_MESSAGE_HAS(json, "\"name\": \"only\"", "\"name\": \"net to_file\"");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { WriteChromeTrace(net, "/nonexistent_dir/x.json"); }),
                     "/nonexistent_dir/x.json");
}

TEST(NetProfilerTest, CollectivesGetATrackOfTheirOwnWithTheirBytes) {
  OperatorDef gloo = MakeOp("AllreduceCoalesced", {"world", "g"}, {"g"});
  gloo.set_engine("GLOO");
  EXPECT_TRUE(IsCollectiveOp(gloo));
  EXPECT_TRUE(IsCollectiveOp(MakeOp("NCCLAllreduce", {"a"}, {"a"})));
  EXPECT_TRUE(IsCollectiveOp(MakeOp("Broadcast", {"a", "b"}, {"a", "b"})));
  EXPECT_FALSE(IsCollectiveOp(MakeOp("FC", {"x", "w", "b"}, {"y"})));

  Workspace ws;
  for (const char* name : {"a", "b"}) {
    Tensor* t = ws.CreateBlob(name)->GetMutableTensor();
    t->Resize({10});
    float* data = t->mutable_data<float>();
    for (int i = 0; i < 10; ++i) data[i] = 1.0f;
  }
  OperatorDef sum = MakeOp("Allreduce", {"a", "b"}, {"a", "b"});
  sum.set_name("sum_ab");
  NetBase* net = ws.CreateNet(Net("mixed", "simple", {SleepOn("compute", 1, 0), sum}));
  NetProfiler profiler(net);
  profiler.Run();
  const std::vector<OpTraceEvent>& events = profiler.last_run_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0].collective);
  EXPECT_TRUE(events[1].collective);
  EXPECT_EQ(events[1].bytes, 80);
  const std::string json = profiler.ChromeTraceJson();
  // The op on its thread, again on the collectives track; the run.
  EXPECT_EQ(Count(json, "\"ph\": \"X\""), 4u);
  EXPECT_MESSAGE_HAS(json, "\"args\": {\"name\": \"collectives\"}", "\"cat\": \"collective\"",
                     "\"bytes\": 80", "\"name\": \"sum_ab\"");
  EXPECT_EQ(Count(json, "{"), Count(json, "}"));
}

TEST(NetProfilerTest, JsonEscapesNames) {
  Workspace ws;
  NetBase* net = ws.CreateNet(Net("esc", "simple", {SleepOn("a\"b\\c", 0, 0)}));
  NetProfiler profiler(net);
  profiler.Run();
  EXPECT_MESSAGE_HAS(profiler.ChromeTraceJson(), "\"name\": \"a\\\"b\\\\c\"");
}

}  // namespace
}  // namespace doppio
