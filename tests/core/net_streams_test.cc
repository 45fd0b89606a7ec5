// SimpleNet and DagNet with ops on asynchronous devices, made of host
// threads (tests/core/fake_streams.h): results equal a sequential
// interpretation written here, whatever the schedule; which waits, records
// and drains happen; that async ops return before their work is done and
// host ops do not start before the device work they read; failed device
// work reported as an Error naming the op; host-only nets untouched.
//
// The fake device delays every piece of work at random, so a missing wait
// shows up as a read of a stale value (the first test checks that the fake
// can catch one).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/gradient.h"
#include "core/net_dag.h"
#include "core/net_simple.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/core/fake_streams.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::CurrentFakeBackend;
using testing::ErrorOf;
using testing::FakeStreamBackend;
using testing::FakeStreamContext;
using testing::IntArg;
using testing::MakeOp;
using testing::ScopedFakeBackend;

// splitmix64's finalizer: a read of a stale value changes every output bit.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What every test op computes, written once for the ops and the reference:
// output j = Mix(Mix(...Mix(salt) ^ in_0 ...) ^ in_k) + j).
std::vector<int64_t> MixValues(int64_t salt, const std::vector<int64_t>& inputs, int outputs) {
  uint64_t h = Mix(static_cast<uint64_t>(salt));
  for (int64_t value : inputs) h = Mix(h ^ static_cast<uint64_t>(value));
  std::vector<int64_t> values;
  for (int j = 0; j < outputs; ++j) values.push_back(static_cast<int64_t>(Mix(h + j)));
  return values;
}

// The mix on a fake device: the inputs are read and the outputs written by
// work queued on the op's stream, `delay_us` after it starts. Arguments:
// launch_us sleeps on the host while queuing (so a dag's workers overlap),
// fail makes the queued work throw, launch_fail makes the launch throw.
template <bool kNeedsHostSync>
class FakeMixOp final : public Operator<FakeStreamContext> {
 public:
  FakeMixOp(const OperatorDef& def, Workspace* ws)
      : Operator<FakeStreamContext>(def, ws),
        salt_(GetSingleArgument<int64_t>("salt", 0)),
        delay_us_(GetSingleArgument<int>("delay_us", 0)),
        launch_us_(GetSingleArgument<int>("launch_us", 0)),
        fail_(GetSingleArgument<int>("fail", 0) != 0),
        launch_fail_(GetSingleArgument<int>("launch_fail", 0) != 0) {}

  bool NeedsHostSync() const override { return kNeedsHostSync; }

  void RunOnDevice() override {
    if (launch_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(launch_us_));
    DOPPIO_ENFORCE(!launch_fail_, "launch refused by op ", DisplayName());
    std::vector<const int64_t*> inputs;
    for (int i = 0; i < InputSize(); ++i) inputs.push_back(Input(i).data<int64_t>());
    std::vector<int64_t*> outputs;
    for (int j = 0; j < OutputSize(); ++j) {
      Tensor* out = Output(j);
      out->Resize({1});
      outputs.push_back(out->mutable_data<int64_t>());
    }
    context_.Enqueue([=] {
      if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
      DOPPIO_ENFORCE(!fail_, "fake kernel fault");
      std::vector<int64_t> values;
      for (const int64_t* input : inputs) values.push_back(*input);
      // All values first: an output may be one of the inputs.
      const std::vector<int64_t> results =
          MixValues(salt_, values, static_cast<int>(outputs.size()));
      for (size_t j = 0; j < outputs.size(); ++j) *outputs[j] = results[j];
    });
  }

 private:
  int64_t salt_;
  int delay_us_;
  int launch_us_;
  bool fail_;
  bool launch_fail_;
};

OPERATOR_SCHEMA(StreamTestMix).NumInputs(0, 8).NumOutputs(1, 4).AllowAnyInplace();
REGISTER_CPU_OPERATOR(StreamTestMix, FakeMixOp<false>);
NO_GRADIENT(StreamTestMix, "test-only op");
OPERATOR_SCHEMA(StreamTestMixSync).NumInputs(0, 8).NumOutputs(1, 4).AllowAnyInplace();
REGISTER_CPU_OPERATOR(StreamTestMixSync, FakeMixOp<true>);
NO_GRADIENT(StreamTestMixSync, "test-only op");

// The same mix as a plain host op.
class HostMixOp final : public Operator<CPUContext> {
 public:
  HostMixOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws), salt_(GetSingleArgument<int64_t>("salt", 0)) {}
  void RunOnDevice() override {
    std::vector<int64_t> values;
    for (int i = 0; i < InputSize(); ++i) values.push_back(Input(i).data<int64_t>()[0]);
    const std::vector<int64_t> results = MixValues(salt_, values, OutputSize());
    for (int j = 0; j < OutputSize(); ++j) {
      Tensor* out = Output(j);
      out->Resize({1});
      out->mutable_data<int64_t>()[0] = results[j];
    }
  }

 private:
  int64_t salt_;
};

OPERATOR_SCHEMA(StreamTestHostMix).NumInputs(0, 8).NumOutputs(1, 4).AllowAnyInplace();
REGISTER_CPU_OPERATOR(StreamTestHostMix, HostMixOp);
NO_GRADIENT(StreamTestHostMix, "test-only op");

// Counts how nets call it.
std::atomic<int> counted_runs{0};
std::atomic<int> counted_stream_runs{0};
class CountingOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  void Run() override { ++counted_runs; }
  void RunOnStream(int) override { ++counted_stream_runs; }
};
OPERATOR_SCHEMA(StreamTestCount).NumInputs(0, 1).NumOutputs(0, 1);
REGISTER_CPU_OPERATOR(StreamTestCount, CountingOp);
NO_GRADIENT(StreamTestCount, "test-only op");

// ---- net building and the sequential reference ----

enum class Kind { kHost, kAsync, kHostSynced };

OperatorDef MixOp(Kind kind, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs, int64_t salt, int device = 1,
                  std::vector<Argument> extra = {}) {
  const char* type = kind == Kind::kHost    ? "StreamTestHostMix"
                     : kind == Kind::kAsync ? "StreamTestMix"
                                            : "StreamTestMixSync";
  extra.push_back(IntArg("salt", salt));
  OperatorDef op = MakeOp(type, inputs, outputs, extra);
  op.mutable_device_option()->set_device_type(0);
  // Fake devices are 1 and up; host ops are on CPU device 0.
  op.mutable_device_option()->set_cuda_gpu_id(kind == Kind::kHost ? 0 : device);
  return op;
}

OperatorDef Named(OperatorDef op, const std::string& name) {
  op.set_name(name);
  return op;
}

NetDef MakeNet(const std::string& type, const std::vector<OperatorDef>& ops, int workers = 1) {
  NetDef net;
  net.set_name("streams_" + type);
  net.set_type(type);
  for (const OperatorDef& op : ops) *net.add_op() = op;
  if (type != "simple") *net.add_arg() = IntArg("num_workers", workers);
  return net;
}

void SetInt64(Workspace* ws, const std::string& name, int64_t value) {
  Tensor* t = ws->CreateBlob(name)->GetMutableTensor();
  t->Resize({1});
  t->mutable_data<int64_t>()[0] = value;
}

int64_t GetInt64(Workspace* ws, const std::string& name) {
  return ws->GetBlob(name)->GetTensor().data<int64_t>()[0];
}

// The net's ops one after another, on plain values.
void Interpret(const NetDef& net, std::map<std::string, int64_t>* blobs) {
  for (const OperatorDef& op : net.op()) {
    std::vector<int64_t> inputs;
    for (const std::string& name : op.input()) inputs.push_back(blobs->at(name));
    int64_t salt = 0;
    for (const Argument& arg : op.arg()) {
      if (arg.name() == "salt") salt = arg.i();
    }
    const std::vector<int64_t> values = MixValues(salt, inputs, op.output_size());
    for (int j = 0; j < op.output_size(); ++j) (*blobs)[op.output(j)] = values[j];
  }
}

// Random ops over blobs b0..b{n-1} on the host and fake devices 1 and 2,
// some in place, some host-synced.
NetDef RandomNet(uint32_t seed, const std::string& type, int workers, int* num_blobs) {
  std::mt19937 rng(seed);
  auto below = [&](int n) { return static_cast<int>(rng() % n); };
  *num_blobs = 4 + below(6);
  auto blob = [&] { return "b" + std::to_string(below(*num_blobs)); };
  std::vector<OperatorDef> ops;
  const int num_ops = 6 + below(20);
  for (int i = 0; i < num_ops; ++i) {
    std::vector<std::string> inputs, outputs;
    for (int k = below(4); k > 0; --k) inputs.push_back(blob());
    if (!inputs.empty() && below(3) == 0) outputs.push_back(inputs[below(inputs.size())]);
    for (int k = 1 + below(2); static_cast<int>(outputs.size()) < k;) {
      const std::string name = blob();
      if (std::find(outputs.begin(), outputs.end(), name) == outputs.end()) {
        outputs.push_back(name);
      }
    }
    const int roll = below(10);
    const Kind kind = roll < 2 ? Kind::kHost : roll < 9 ? Kind::kAsync : Kind::kHostSynced;
    ops.push_back(MixOp(kind, inputs, outputs, static_cast<int64_t>(rng()), 1 + below(2),
                        {IntArg("launch_us", below(3) * 100)}));
  }
  return MakeNet(type, ops, workers);
}

// ---- the fake itself ----

TEST(FakeStreamsTest, UnorderedWorkOnTwoStreamsRunsOutOfOrder) {
  // Without this the tests below could not fail: a read that no event
  // orders after a slow write sees the old value.
  FakeStreamBackend backend(0);
  std::atomic<int> value{0};
  std::atomic<int> seen{-1};
  backend.Enqueue(1, 0, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    value = 1;
  });
  backend.Enqueue(1, 1, [&] { seen = value.load(); });
  backend.SynchronizeStream(1, 0);
  backend.SynchronizeStream(1, 1);
  EXPECT_EQ(seen, 0);
}

// ---- results ----

class NetStreamsTest : public ::testing::Test {
 protected:
  FakeStreamBackend backend_{/*max_jitter_us=*/300, /*seed=*/7};
  ScopedFakeBackend scope_{&backend_};
};

TEST_F(NetStreamsTest, RandomNetsMatchTheSequentialReference) {
  struct Executor {
    std::string type;
    int workers;
  };
  const std::vector<Executor> executors = {{"simple", 1}, {"dag", 1}, {"dag", 2}, {"dag", 3}};
  for (uint32_t seed = 0; seed < 24; ++seed) {
    for (const Executor& executor : executors) {
      int num_blobs = 0;
      const NetDef def = RandomNet(seed, executor.type, executor.workers, &num_blobs);
      Workspace ws;
      std::map<std::string, int64_t> reference;
      for (int b = 0; b < num_blobs; ++b) {
        SetInt64(&ws, "b" + std::to_string(b), b);
        reference["b" + std::to_string(b)] = b;
      }
      NetBase* net = ws.CreateNet(def);
      backend_.ResetCounters();
      // Reruns start from the blobs the last run left, so a read of the
      // previous run's value is caught too.
      for (int run = 0; run < 3; ++run) {
        net->Run();
        // Run() returns with no device work of the run left.
        ASSERT_EQ(backend_.pending(), 0) << executor.type << " seed " << seed;
        Interpret(def, &reference);
        for (const auto& entry : reference) {
          ASSERT_EQ(GetInt64(&ws, entry.first), entry.second)
              << executor.type << " x" << executor.workers << ", blob " << entry.first << ", seed "
              << seed << ", run " << run;
        }
      }
      for (const auto& stream : backend_.counters().streams_with_work) {
        EXPECT_LT(stream.second, executor.workers) << "stream ids are worker indices";
      }
    }
  }
}

TEST_F(NetStreamsTest, SimpleNetQueuesWithoutHostSyncsAndWaitsOnlyWhereNeeded) {
  // a -> b on device 1 (one stream: no event), b -> c on device 2 (a device
  // wait), c -> h on the host (a host wait).
  const NetDef def = MakeNet(
      "simple", {Named(MixOp(Kind::kAsync, {"x"}, {"a"}, 1, 1, {IntArg("delay_us", 100000)}), "a"),
                 MixOp(Kind::kAsync, {"a"}, {"b"}, 2, 1), MixOp(Kind::kAsync, {"b"}, {"c"}, 3, 2),
                 MixOp(Kind::kHost, {"c"}, {"h"}, 4)});
  Workspace ws;
  SetInt64(&ws, "x", 5);
  NetBase* net = ws.CreateNet(def);
  int pending_after_first_op = -1;
  net->SetOpObserver([&](int index, const OperatorBase&, double) {
    if (index == 0) pending_after_first_op = backend_.pending();
  });
  backend_.ResetCounters();
  net->Run();

  // Op "a" returned while its (100 ms) work was still queued.
  EXPECT_GT(pending_after_first_op, 0);
  EXPECT_EQ(backend_.pending(), 0);
  std::map<std::string, int64_t> reference{{"x", 5}};
  Interpret(def, &reference);
  for (const char* name : {"a", "b", "c", "h"}) EXPECT_EQ(GetInt64(&ws, name), reference[name]);

  const FakeStreamBackend::Counters counters = backend_.counters();
  EXPECT_EQ(counters.device_waits, 1);
  // Events of b and c, plus a drain of each device's stream 0.
  EXPECT_EQ(counters.records, 2 + 2);
  // h's wait for c, plus the two drains.
  EXPECT_EQ(counters.host_waits, 1 + 2);
  const std::set<std::pair<int, int>> streams{{1, 0}, {2, 0}};
  EXPECT_EQ(counters.streams_with_work, streams);
}

TEST_F(NetStreamsTest, HostSyncedOpWaitsForItsParentsAndItsOwnWork) {
  for (const char* type : {"simple", "dag"}) {
    const NetDef def =
        MakeNet(type, {MixOp(Kind::kAsync, {"x"}, {"a"}, 1, 1, {IntArg("delay_us", 50000)}),
                       MixOp(Kind::kHostSynced, {"a"}, {"s"}, 2, 2, {IntArg("delay_us", 20000)}),
                       MixOp(Kind::kHost, {"s"}, {"h"}, 3)});
    Workspace ws;
    SetInt64(&ws, "x", 9);
    NetBase* net = ws.CreateNet(def);
    int pending_after_synced_op = -1;
    net->SetOpObserver([&](int index, const OperatorBase&, double) {
      if (index == 1) pending_after_synced_op = backend_.pending();
    });
    net->Run();
    EXPECT_EQ(pending_after_synced_op, 0) << type;
    std::map<std::string, int64_t> reference{{"x", 9}};
    Interpret(def, &reference);
    EXPECT_EQ(GetInt64(&ws, "h"), reference["h"]) << type;
  }
}

TEST_F(NetStreamsTest, DagWorkersUseTheirOwnStreamsAndJoinThroughEvents) {
  // Six independent slow-to-launch ops on device 1, then one op reading all.
  std::vector<OperatorDef> ops;
  std::vector<std::string> parts;
  for (int i = 0; i < 6; ++i) {
    parts.push_back("p" + std::to_string(i));
    ops.push_back(MixOp(Kind::kAsync, {"x"}, {parts.back()}, i, 1,
                        {IntArg("launch_us", 20000), IntArg("delay_us", 5000)}));
  }
  ops.push_back(MixOp(Kind::kAsync, parts, {"joined"}, 99, 1));
  const NetDef def = MakeNet("dag", ops, /*workers=*/3);
  Workspace ws;
  SetInt64(&ws, "x", 1);
  NetBase* net = ws.CreateNet(def);
  backend_.ResetCounters();
  net->Run();

  std::map<std::string, int64_t> reference{{"x", 1}};
  Interpret(def, &reference);
  EXPECT_EQ(GetInt64(&ws, "joined"), reference["joined"]);
  std::set<int> streams;
  for (const auto& stream : backend_.counters().streams_with_work) {
    EXPECT_EQ(stream.first, 1);
    streams.insert(stream.second);
  }
  EXPECT_GT(streams.size(), 1u) << "the three workers should have shared the launches";
  // The join waits on the device for each part made on another stream.
  EXPECT_GE(backend_.counters().device_waits, 1);
  EXPECT_EQ(backend_.counters().host_waits, static_cast<int>(streams.size()));
}

// ---- errors ----

TEST_F(NetStreamsTest, FailedDeviceWorkIsAnErrorNamingTheOp) {
  for (int workers : {0, 1, 2}) {
    FakeStreamBackend backend(100, 3);
    ScopedFakeBackend scope(&backend);
    const std::string type = workers == 0 ? "simple" : "dag";
    const NetDef def =
        MakeNet(type,
                {MixOp(Kind::kAsync, {"x"}, {"a"}, 1, 1),
                 Named(MixOp(Kind::kAsync, {"a"}, {"b"}, 2, 2, {IntArg("fail", 1)}), "boom"),
                 MixOp(Kind::kAsync, {"b"}, {"c"}, 3, 2), MixOp(Kind::kAsync, {"a"}, {"d"}, 4, 1)},
                std::max(workers, 1));
    Workspace ws;
    SetInt64(&ws, "x", 2);
    NetBase* net = ws.CreateNet(def);
    const std::string message = ErrorOf([&] { net->Run(); });
    EXPECT_MESSAGE_HAS(message, "fake kernel fault", "StreamTestMix 'boom'", "streams_" + type);
    EXPECT_EQ(backend.pending(), 0) << type;
  }
}

TEST_F(NetStreamsTest, HostReaderOfFailedDeviceWorkNamesTheFailedOp) {
  for (const char* type : {"simple", "dag"}) {
    FakeStreamBackend backend(0);
    ScopedFakeBackend scope(&backend);
    const NetDef def =
        MakeNet(type, {Named(MixOp(Kind::kAsync, {"x"}, {"a"}, 1, 1, {IntArg("fail", 1)}), "boom"),
                       Named(MixOp(Kind::kHost, {"a"}, {"h"}, 2), "reader")});
    Workspace ws;
    SetInt64(&ws, "x", 2);
    NetBase* net = ws.CreateNet(def);
    EXPECT_MESSAGE_HAS(ErrorOf([&] { net->Run(); }), "fake kernel fault",
                       "device work of op #0 StreamTestMix 'boom'",
                       "while running op #1 StreamTestHostMix 'reader'");
  }
}

TEST_F(NetStreamsTest, LaunchErrorStillDrainsQueuedWorkAndTheNetReruns) {
  for (const char* type : {"simple", "dag"}) {
    NetDef def = MakeNet(
        type, {MixOp(Kind::kAsync, {"x"}, {"a"}, 1, 1, {IntArg("delay_us", 50000)}),
               Named(MixOp(Kind::kAsync, {"x"}, {"b"}, 2, 2, {IntArg("launch_fail", 1)}), "bad")});
    Workspace ws;
    SetInt64(&ws, "x", 3);
    NetBase* net = ws.CreateNet(def);
    EXPECT_MESSAGE_HAS(ErrorOf([&] { net->Run(); }), "launch refused", "'bad'");
    EXPECT_EQ(backend_.pending(), 0) << type;
  }
}

// ---- host-only nets ----

TEST_F(NetStreamsTest, HostOnlyNetsHaveNoSchedulerAndCallRun) {
  for (const char* type : {"simple", "dag"}) {
    counted_runs = 0;
    counted_stream_runs = 0;
    Workspace ws;
    NetBase* net = ws.CreateNet(MakeNet(
        type, {MakeOp("StreamTestCount", {}, {"y"}), MakeOp("StreamTestCount", {"y"}, {})}));
    net->Run();
    EXPECT_EQ(counted_runs, 2) << type;
    EXPECT_EQ(counted_stream_runs, 0) << type;
    if (auto* simple = dynamic_cast<SimpleNet*>(net)) {
      EXPECT_EQ(simple->stream_scheduler(), nullptr);
    } else {
      EXPECT_EQ(dynamic_cast<DagNet*>(net)->stream_scheduler(), nullptr);
    }
  }
}

TEST_F(NetStreamsTest, HostOpsInStreamNetsStillCallRun) {
  counted_runs = 0;
  counted_stream_runs = 0;
  Workspace ws;
  SetInt64(&ws, "x", 1);
  NetBase* net = ws.CreateNet(MakeNet(
      "simple", {MixOp(Kind::kAsync, {"x"}, {"a"}, 1), MakeOp("StreamTestCount", {"a"}, {})}));
  net->Run();
  EXPECT_EQ(counted_runs, 1);
  EXPECT_EQ(counted_stream_runs, 0);
}

}  // namespace
}  // namespace doppio
