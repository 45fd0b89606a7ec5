// The "dag" executor: dependency analysis (read/write/control hazards),
// results identical to a sequential interpretation on random nets, error
// propagation, device pools running concurrently, num_workers and
// chain affinity. Test-only ops below.
#include "core/net_dag.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/gradient.h"
#include "core/intra_op_threads.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using Clock = std::chrono::steady_clock;

// splitmix64's finalizer: every input bit changes every output bit, so a
// read of a wrong (too old or too new) value shows in the result.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What DagTestMix computes, written once for the ops and the references:
// output j = Mix(Mix(...Mix(salt) ^ in_0 ...) ^ in_k) + j).
std::vector<int64_t> MixValues(int64_t salt, const std::vector<int64_t>& inputs, int outputs) {
  uint64_t h = Mix(static_cast<uint64_t>(salt));
  for (int64_t value : inputs) h = Mix(h ^ static_cast<uint64_t>(value));
  std::vector<int64_t> values;
  for (int j = 0; j < outputs; ++j) values.push_back(static_cast<int64_t>(Mix(h + j)));
  return values;
}

// Outputs from MixValues over its 1-element int64 inputs. `sleep_us` waits
// before reading the inputs and `spin` busy-loops, to shake up schedules.
class MixOp final : public Operator<CPUContext> {
 public:
  MixOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws),
        salt_(GetSingleArgument<int64_t>("salt", 0)),
        sleep_us_(GetSingleArgument<int>("sleep_us", 0)),
        spin_(GetSingleArgument<int>("spin", 0)) {}
  void RunOnDevice() override {
    if (sleep_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    volatile uint64_t sink = 0;
    for (int i = 0; i < spin_; ++i) sink = sink + i;
    std::vector<int64_t> inputs;
    for (int i = 0; i < InputSize(); ++i) inputs.push_back(Input(i).data<int64_t>()[0]);
    // All values first: an output may be one of the inputs.
    const std::vector<int64_t> values = MixValues(salt_, inputs, OutputSize());
    for (int j = 0; j < OutputSize(); ++j) {
      Tensor* out = Output(j);
      out->Resize({1});
      out->mutable_data<int64_t>()[0] = values[j];
    }
  }

 private:
  int64_t salt_;
  int sleep_us_;
  int spin_;
};
OPERATOR_SCHEMA(DagTestMix).NumInputs(0, 8).NumOutputs(1, 4).AllowAnyInplace();
REGISTER_CPU_OPERATOR(DagTestMix, MixOp);
NO_GRADIENT(DagTestMix, "test-only op");

// Names of the DagTestSleep ops that have started, so an op can wait for
// another to be running.
std::mutex started_mutex;
std::condition_variable started_changed;
std::set<std::string> started_ops;

// Fails while its input holds a nonzero value: with a doppio::Error, or with
// a std::runtime_error when `std_exception` is set. With `after_start_of`, it
// first waits (up to 10 s) until the DagTestSleep op of that name is running.
class FailOp final : public Operator<CPUContext> {
 public:
  FailOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws),
        std_exception_(GetSingleArgument<int>("std_exception", 0) != 0),
        after_start_of_(GetSingleArgument<std::string>("after_start_of", "")) {}
  void RunOnDevice() override {
    if (!after_start_of_.empty()) {
      std::unique_lock<std::mutex> lock(started_mutex);
      started_changed.wait_for(lock, std::chrono::seconds(10),
                               [&] { return started_ops.count(after_start_of_) > 0; });
    }
    if (Input(0).data<int64_t>()[0] != 0) {
      if (std_exception_) throw std::runtime_error("library failure");
      DOPPIO_THROW("deliberate failure");
    }
    Output(0)->Resize({1});
    Output(0)->mutable_data<int64_t>()[0] = 1;
  }

 private:
  bool std_exception_;
  std::string after_start_of_;
};
OPERATOR_SCHEMA(DagTestFail).NumInputs(1).NumOutputs(1);
REGISTER_CPU_OPERATOR(DagTestFail, FailOp);
NO_GRADIENT(DagTestFail, "test-only op");

// When each op ran and on which thread, across the ops of a test.
struct RunRecord {
  std::string name;
  Clock::time_point start, end;
  std::thread::id thread;
};
std::mutex records_mutex;
std::vector<RunRecord> records;
std::atomic<int> active_ops{0};
std::atomic<int> max_active_ops{0};

void ResetRecords() {
  {
    std::lock_guard<std::mutex> lock(started_mutex);
    started_ops.clear();
  }
  std::lock_guard<std::mutex> lock(records_mutex);
  records.clear();
  active_ops = 0;
  max_active_ops = 0;
}

// Sleeps `ms`, recording its run and how many such ops run at once.
class SleepOp final : public Operator<CPUContext> {
 public:
  SleepOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws), ms_(GetSingleArgument<int>("ms", 0)) {}
  void RunOnDevice() override {
    RunRecord record{def().name(), Clock::now(), {}, std::this_thread::get_id()};
    {
      std::lock_guard<std::mutex> lock(started_mutex);
      started_ops.insert(def().name());
    }
    started_changed.notify_all();
    const int now_active = ++active_ops;
    int seen = max_active_ops.load();
    while (now_active > seen && !max_active_ops.compare_exchange_weak(seen, now_active)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    --active_ops;
    record.end = Clock::now();
    for (int j = 0; j < OutputSize(); ++j) {
      Output(j)->Resize({1});
      Output(j)->mutable_data<int64_t>()[0] = 0;
    }
    std::lock_guard<std::mutex> lock(records_mutex);
    records.push_back(record);
  }

 private:
  int ms_;
};
OPERATOR_SCHEMA(DagTestSleep).NumInputs(0, 8).NumOutputs(0, 4).AllowAnyInplace();
REGISTER_CPU_OPERATOR(DagTestSleep, SleepOp);
NO_GRADIENT(DagTestSleep, "test-only op");

const RunRecord& RecordOf(const std::string& name) {
  for (const RunRecord& record : records) {
    if (record.name == name) return record;
  }
  static const RunRecord missing{};
  ADD_FAILURE() << "op '" << name << "' did not run";
  return missing;
}

void SetInt64(Workspace* ws, const std::string& name, int64_t value) {
  Tensor* t = ws->CreateBlob(name)->GetMutableTensor();
  t->Resize({1});
  t->mutable_data<int64_t>()[0] = value;
}

int64_t GetInt64(Workspace* ws, const std::string& name) {
  return ws->GetBlob(name)->GetTensor().data<int64_t>()[0];
}

OperatorDef OnCpu(OperatorDef op, int device) {
  op.mutable_device_option()->set_device_type(0);
  op.mutable_device_option()->set_cuda_gpu_id(device);
  return op;
}

OperatorDef Named(OperatorDef op, const std::string& name) {
  op.set_name(name);
  return op;
}

OperatorDef Mix(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                int64_t salt, int device = 0, int sleep_us = 0) {
  return OnCpu(MakeOp("DagTestMix", inputs, outputs,
                      {IntArg("salt", salt), IntArg("sleep_us", sleep_us)}),
               device);
}

OperatorDef Sleep(const std::string& name, int ms, int device,
                  const std::vector<std::string>& inputs = {},
                  const std::vector<std::string>& outputs = {}) {
  return Named(OnCpu(MakeOp("DagTestSleep", inputs, outputs, {IntArg("ms", ms)}), device), name);
}

NetDef DagNetDef(const std::string& name, const std::vector<OperatorDef>& ops, int workers = 0) {
  NetDef net;
  net.set_name(name);
  net.set_type("dag");
  for (const OperatorDef& op : ops) *net.add_op() = op;
  if (workers > 0) *net.add_arg() = IntArg("num_workers", workers);
  return net;
}

double SecondsToRun(NetBase* net) {
  const auto start = Clock::now();
  net->Run();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- dependency analysis ----

TEST(OpDependenciesTest, ReadAfterWriteWriteAfterReadWriteAfterWriteAndControl) {
  OperatorDef control = Mix({}, {"v"}, 5);
  control.add_control_input("w");
  const NetDef net = DagNetDef("deps", {
      Mix({"x"}, {"y"}, 0),       // 0
      Mix({"y"}, {"z"}, 1),       // 1: reads y after 0 wrote it
      Mix({"x"}, {"x"}, 2),       // 2: in place, after 0 read x; not after itself
      Mix({"x", "y"}, {"w"}, 3),  // 3: x from 2, y from 0
      Mix({}, {"y"}, 4),          // 4: rewrites y: after writer 0, readers 1 and 3
      control,                    // 5: control input w, written by 3
      Mix({}, {"v"}, 6),          // 6: rewrites v after 5 wrote it
      Mix({"q"}, {"q", "r"}, 7),  // 7: reads a blob nobody wrote: no parent
  });
  const std::vector<std::vector<int>> expected = {{}, {0}, {0}, {0, 2}, {0, 1, 3}, {3}, {5}, {}};
  EXPECT_EQ(OpDependencies(net), expected);
}

TEST(OpDependenciesTest, ReadersOfAControlInputBlockItsNextWriter) {
  OperatorDef waits = Mix({}, {"b"}, 1);
  waits.add_control_input("a");
  const NetDef net = DagNetDef("control", {Mix({}, {"a"}, 0), waits, Mix({}, {"a"}, 2)});
  const std::vector<std::vector<int>> expected = {{}, {0}, {0, 1}};
  EXPECT_EQ(OpDependencies(net), expected);
}

// ---- results equal a sequential interpretation ----

// Runs the Mix ops of `net` in order over `values`: the reference.
void InterpretMixNet(const NetDef& net, std::map<std::string, int64_t>* values) {
  for (const OperatorDef& op : net.op()) {
    std::vector<int64_t> inputs;
    for (const std::string& name : op.input()) inputs.push_back(values->at(name));
    int64_t salt = 0;
    for (const Argument& arg : op.arg()) {
      if (arg.name() == "salt") salt = arg.i();
    }
    const std::vector<int64_t> out = MixValues(salt, inputs, op.output_size());
    for (int j = 0; j < op.output_size(); ++j) (*values)[op.output(j)] = out[j];
  }
}

// A random net of Mix ops over a few reused blobs: random fan-in, in-place
// writes, several outputs, control inputs, 1-3 CPU devices.
NetDef RandomMixNet(uint32_t seed, int workers, int* num_blobs) {
  std::mt19937 rng(seed);
  auto below = [&](int n) { return static_cast<int>(rng() % n); };
  *num_blobs = 2 + below(8);
  const int num_ops = 1 + below(40);
  const int devices = 1 + below(3);
  auto blob = [&] { return "b" + std::to_string(below(*num_blobs)); };
  std::vector<OperatorDef> ops;
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
    OperatorDef op = Mix(inputs, outputs, static_cast<int64_t>(rng()), below(devices));
    *op.add_arg() = IntArg("spin", below(4) * 500);
    if (below(6) == 0) op.add_control_input(blob());
    ops.push_back(op);
  }
  return DagNetDef("random" + std::to_string(seed), ops, workers);
}

TEST(DagNetTest, RandomNetsMatchSimpleNetAndSequentialReference) {
  for (uint32_t seed = 0; seed < 300; ++seed) {
    const int workers = 1 + seed % 4;
    int num_blobs = 0;
    const NetDef dag_def = RandomMixNet(seed, workers, &num_blobs);
    NetDef simple_def = dag_def;
    simple_def.set_type("simple");
    Workspace dag_ws, simple_ws;
    std::map<std::string, int64_t> reference;
    for (int b = 0; b < num_blobs; ++b) {
      const std::string name = "b" + std::to_string(b);
      SetInt64(&dag_ws, name, b);
      SetInt64(&simple_ws, name, b);
      reference[name] = b;
    }
    NetBase* dag = dag_ws.CreateNet(dag_def);
    NetBase* simple = simple_ws.CreateNet(simple_def);
    // Runs repeat on the blobs the last run left: reruns are checked too.
    for (int run = 0; run < 3; ++run) {
      dag->Run();
      simple->Run();
      InterpretMixNet(dag_def, &reference);
      for (const auto& entry : reference) {
        ASSERT_EQ(GetInt64(&dag_ws, entry.first), entry.second)
            << "dag, blob " << entry.first << ", seed " << seed << ", run " << run;
        ASSERT_EQ(GetInt64(&simple_ws, entry.first), entry.second)
            << "simple, blob " << entry.first << ", seed " << seed << ", run " << run;
      }
    }
  }
}

TEST(DagNetTest, AsyncDagIsTheSameExecutor) {
  Workspace ws;
  SetInt64(&ws, "x", 7);
  NetDef def = DagNetDef("alias", {Mix({"x"}, {"x"}, 1), Mix({"x"}, {"y"}, 2)});
  def.set_type("async_dag");
  NetBase* net = ws.CreateNet(def);
  ASSERT_NE(dynamic_cast<DagNet*>(net), nullptr);
  net->Run();
  EXPECT_EQ(GetInt64(&ws, "y"), MixValues(2, {MixValues(1, {7}, 1)[0]}, 1)[0]);
}

// ---- hazards ----

TEST(DagNetTest, InPlaceChainAcrossDevicesKeepsOrder) {
  std::vector<OperatorDef> ops;
  int64_t expected = 3;
  for (int i = 0; i < 60; ++i) {
    ops.push_back(Mix({"x"}, {"x"}, i, i % 2));
    expected = MixValues(i, {expected}, 1)[0];
  }
  Workspace ws;
  SetInt64(&ws, "x", 3);
  ws.CreateNet(DagNetDef("inplace", ops, 2))->Run();
  EXPECT_EQ(GetInt64(&ws, "x"), expected);
}

TEST(DagNetTest, WriteAfterReadWaitsForTheSlowReader) {
  // Op 0 reads t only after 50 ms; op 1, on another device, overwrites t.
  Workspace ws;
  SetInt64(&ws, "t", 11);
  ws.CreateNet(DagNetDef("war", {Mix({"t"}, {"a"}, 1, 0, 50000), Mix({}, {"t"}, 2, 1)}))->Run();
  EXPECT_EQ(GetInt64(&ws, "a"), MixValues(1, {11}, 1)[0]);
  EXPECT_EQ(GetInt64(&ws, "t"), MixValues(2, {}, 1)[0]);
}

TEST(DagNetTest, WriteAfterWriteKeepsTheLaterValue) {
  Workspace ws;
  ws.CreateNet(DagNetDef("waw", {Mix({}, {"t"}, 1, 0, 50000), Mix({}, {"t"}, 2, 1)}))->Run();
  EXPECT_EQ(GetInt64(&ws, "t"), MixValues(2, {}, 1)[0]);
}

TEST(DagNetTest, ControlInputOrdersOpsWithoutData) {
  ResetRecords();
  OperatorDef after = Sleep("after", 0, 1);
  after.add_control_input("done");
  Workspace ws;
  ws.CreateNet(DagNetDef("control", {Sleep("before", 100, 0, {}, {"done"}), after}))->Run();
  EXPECT_GE(RecordOf("after").start, RecordOf("before").end);
}

// ---- errors ----

TEST(DagNetTest, FirstErrorStopsSchedulingWaitsForRunningOpsAndNetReruns) {
  ResetRecords();
  Workspace ws;
  SetInt64(&ws, "flag", 1);
  SetInt64(&ws, "x", 0);
  NetBase* net = ws.CreateNet(DagNetDef(
      "failing", {
          Sleep("slow", 200, 1, {}, {"s"}),                           // 0: running meanwhile
          Named(OnCpu(MakeOp("DagTestFail", {"flag"}, {"f"},
                             {testing::StringArg("after_start_of", "slow")}),
                      0),
                "bad"),                                                // 1
          Sleep("after_bad", 0, 0, {"f"}),                             // 2: never starts
          Sleep("after_slow", 0, 1, {"s"}),                            // 3: not scheduled
      }));
  const std::string message = ErrorOf([&] { net->Run(); });
  EXPECT_MESSAGE_HAS(message, "deliberate failure", "op #1 DagTestFail 'bad'",
                     "inputs [flag]", "in net 'failing'");
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    std::set<std::string> ran;
    for (const RunRecord& record : records) ran.insert(record.name);
    EXPECT_EQ(ran.count("after_bad"), 0u) << "an op ran after its parent failed";
    EXPECT_EQ(ran.count("after_slow"), 0u) << "an op was scheduled after the failure";
    // Run() returned only after the op running at the time had finished.
    EXPECT_EQ(ran.count("slow"), 1u);
  }
  ResetRecords();
  SetInt64(&ws, "flag", 0);
  net->Run();
  std::lock_guard<std::mutex> lock(records_mutex);
  EXPECT_EQ(records.size(), 3u);
}

TEST(DagNetTest, LibraryExceptionsGetOpContextToo) {
  Workspace ws;
  SetInt64(&ws, "flag", 1);
  OperatorDef fail = Named(MakeOp("DagTestFail", {"flag"}, {"f"}, {IntArg("std_exception", 1)}),
                           "lib");
  NetBase* net = ws.CreateNet(DagNetDef("lib_error", {Mix({}, {"a"}, 1), fail}));
  EXPECT_MESSAGE_HAS(ErrorOf([&] { net->Run(); }), "library failure", "DagTestFail 'lib'",
                     "in net 'lib_error'");
}

TEST(DagNetTest, ManySimultaneousFailuresGiveOneErrorAndNoHang) {
  Workspace ws;
  SetInt64(&ws, "flag", 1);
  std::vector<OperatorDef> ops;
  for (int i = 0; i < 16; ++i) {
    ops.push_back(OnCpu(MakeOp("DagTestFail", {"flag"}, {"f" + std::to_string(i)}), i % 2));
    ops.push_back(Mix({"f" + std::to_string(i)}, {"g" + std::to_string(i)}, i, i % 2));
  }
  NetBase* net = ws.CreateNet(DagNetDef("all_fail", ops, 4));
  for (int run = 0; run < 20; ++run) {
    EXPECT_MESSAGE_HAS(ErrorOf([&] { net->Run(); }), "deliberate failure", "DagTestFail");
  }
  SetInt64(&ws, "flag", 0);
  net->Run();
  EXPECT_EQ(GetInt64(&ws, "g15"), MixValues(15, {1}, 1)[0]);
}

// ---- devices and workers ----

TEST(DagNetTest, OpsOfTwoCpuDevicesOverlap) {
  ResetRecords();
  Workspace ws;
  NetDef def = DagNetDef("two_devices", {Sleep("a", 200, 0), Sleep("b", 200, 1)});
  NetBase* dag = ws.CreateNet(def);
  EXPECT_EQ(dynamic_cast<DagNet*>(dag)->num_devices(), 2);
  EXPECT_LT(SecondsToRun(dag), 0.35);
  EXPECT_EQ(max_active_ops.load(), 2);
  // The same ops on one device, one worker: one after the other.
  def.set_name("one_device");
  def.mutable_op(1)->mutable_device_option()->set_cuda_gpu_id(0);
  EXPECT_GE(SecondsToRun(ws.CreateNet(def)), 0.4);
}

int MaxConcurrentSleeps(NetDef def) {
  ResetRecords();
  Workspace ws;
  ws.CreateNet(def)->Run();
  return max_active_ops.load();
}

// The sleeping test ops use no core: these nets allow more workers than
// cores, so the counts below hold on any machine.
NetDef Oversubscribed(NetDef def) {
  *def.add_arg() = IntArg("allow_worker_oversubscription", 1);
  return def;
}

TEST(DagNetTest, NumWorkersSetsWorkersPerDevice) {
  const std::vector<OperatorDef> three = {Sleep("a", 150, 0), Sleep("b", 150, 0),
                                          Sleep("c", 150, 0)};
  EXPECT_EQ(MaxConcurrentSleeps(DagNetDef("w1", three)), 1);
  EXPECT_EQ(MaxConcurrentSleeps(Oversubscribed(DagNetDef("w3", three, 3))), 3);
  NetDef field = Oversubscribed(DagNetDef("field2", three));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  field.set_num_workers(2);  // deprecated, and still what Caffe2 nets set
#pragma GCC diagnostic pop
  EXPECT_EQ(MaxConcurrentSleeps(field), 2);
  // The argument wins over the deprecated field.
  *field.add_arg() = IntArg("num_workers", 3);
  EXPECT_EQ(MaxConcurrentSleeps(field), 3);

  Workspace ws;
  NetDef bad = DagNetDef("bad_workers", three);
  *bad.add_arg() = IntArg("num_workers", 0);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws.CreateNet(bad); }), "bad_workers", "num_workers", ">= 1");
}

// A CPU device's pool gets at most its share of the cores, whatever
// num_workers asks (Caffe2's default of 4 per device on 2 cores halved the
// speed); allow_worker_oversubscription keeps the asked-for count.
TEST(DagNetTest, CpuPoolsNeverOutnumberTheCores) {
  const int cores = AvailableCores();
  std::vector<OperatorDef> ops;
  for (int i = 0; i < cores + 3; ++i) ops.push_back(Sleep("s" + std::to_string(i), 100, 0));
  Workspace ws;
  auto* one_device = dynamic_cast<DagNet*>(ws.CreateNet(DagNetDef("capped", ops, cores + 3)));
  ASSERT_NE(one_device, nullptr);
  if (cores == 1) {
    EXPECT_TRUE(one_device->runs_on_caller());
  } else {
    EXPECT_EQ(one_device->pool_workers(0), cores);
  }
  EXPECT_EQ(MaxConcurrentSleeps(DagNetDef("capped_run", ops, cores + 3)), cores);
  EXPECT_EQ(MaxConcurrentSleeps(Oversubscribed(DagNetDef("asked", ops, cores + 3))), cores + 3);

  // Two CPU devices share the cores; each keeps at least one worker.
  std::vector<OperatorDef> two = {Sleep("a", 0, 0), Sleep("b", 0, 1)};
  auto* shared = dynamic_cast<DagNet*>(ws.CreateNet(DagNetDef("two_capped", two, 4 * cores)));
  ASSERT_NE(shared, nullptr);
  for (int device = 0; device < 2; ++device) {
    EXPECT_EQ(shared->pool_workers(device), std::max(1, cores / 2)) << device;
  }
  auto* asked =
      dynamic_cast<DagNet*>(ws.CreateNet(Oversubscribed(DagNetDef("two_asked", two, 4 * cores))));
  EXPECT_EQ(asked->pool_workers(1), 4 * cores);
}

// The plan is what the net runs, worked out from the NetDef alone, and says
// so in words.
TEST(DagNetTest, ThreadPlanIsWhatTheNetRuns) {
  const int cores = AvailableCores();
  Workspace ws;
  const NetDef def = DagNetDef("planned", {Sleep("a", 0, 0), Sleep("b", 0, 1)}, 4 * cores);
  const DagThreadPlan plan = PlanDagThreads(def);
  auto* net = dynamic_cast<DagNet*>(ws.CreateNet(def));
  ASSERT_NE(net, nullptr);
  ASSERT_EQ(plan.devices.size(), 2u);
  EXPECT_EQ(plan.requested_workers, 4 * cores);
  for (int device = 0; device < 2; ++device) {
    EXPECT_EQ(plan.workers[device], net->pool_workers(device));
  }
  EXPECT_EQ(plan.intra_op_threads, net->intra_op_threads());
  EXPECT_FALSE(plan.runs_on_caller);
  const std::string text = plan.ToString();
  EXPECT_NE(text.find("2 device pools (cpu_0, cpu_1)"), std::string::npos) << text;
  EXPECT_NE(text.find("num_workers " + std::to_string(4 * cores) + ", capped to"),
            std::string::npos)
      << text;

  const DagThreadPlan single = PlanDagThreads(DagNetDef("single", {Sleep("a", 0, 0)}));
  EXPECT_TRUE(single.runs_on_caller);
  EXPECT_NE(single.ToString().find("calling thread"), std::string::npos);
  EXPECT_TRUE(IsDagNetType("dag") && IsDagNetType("async_dag") && !IsDagNetType("simple"));
}

TEST(DagNetTest, ChainStaysOnOneWorker) {
  ResetRecords();
  std::vector<OperatorDef> chain;
  for (int i = 0; i < 20; ++i) chain.push_back(Sleep("s" + std::to_string(i), 0, 0, {"x"}, {"x"}));
  Workspace ws;
  SetInt64(&ws, "x", 0);
  NetBase* net = ws.CreateNet(DagNetDef("chain", chain, 4));
  for (int run = 0; run < 5; ++run) {
    ResetRecords();
    net->Run();
    std::set<std::thread::id> threads;
    for (const RunRecord& record : records) threads.insert(record.thread);
    EXPECT_EQ(records.size(), 20u);
    EXPECT_EQ(threads.size(), 1u) << "run " << run;
  }
}

// One device with one worker: Run() runs the ops itself, in order, and an
// error stops the run there just as on a worker.
TEST(DagNetTest, OneDeviceOneWorkerRunsOnTheCallingThread) {
  ResetRecords();
  Workspace ws;
  SetInt64(&ws, "x", 0);
  NetBase* net = ws.CreateNet(DagNetDef(
      "inline", {Sleep("a", 0, 0, {"x"}, {"y"}), Sleep("b", 0, 0, {}, {"z"}),
                 Sleep("c", 0, 0, {"y", "z"}, {"w"})}));
  ASSERT_TRUE(dynamic_cast<DagNet*>(net)->runs_on_caller());
  net->Run();
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    ASSERT_EQ(records.size(), 3u);
    for (const RunRecord& record : records) {
      EXPECT_EQ(record.thread, std::this_thread::get_id()) << record.name;
    }
    EXPECT_EQ(records[0].name, "a");
    EXPECT_EQ(records[2].name, "c");
  }

  SetInt64(&ws, "flag", 1);
  NetBase* failing = ws.CreateNet(DagNetDef(
      "inline_failing", {Sleep("before", 0, 0, {}, {"p"}),
                         Named(MakeOp("DagTestFail", {"flag"}, {"f"}), "bad"),
                         Sleep("after", 0, 0, {}, {"q"})}));
  ResetRecords();
  EXPECT_MESSAGE_HAS(ErrorOf([&] { failing->Run(); }), "deliberate failure",
                     "op #1 DagTestFail 'bad'", "in net 'inline_failing'");
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    ASSERT_EQ(records.size(), 1u) << "an op ran after the failure";
    EXPECT_EQ(records[0].name, "before");
  }
  SetInt64(&ws, "flag", 0);
  ResetRecords();
  failing->Run();
  EXPECT_EQ(records.size(), 2u);

  // More than one worker, or more than one device: the pools run the ops.
  ResetRecords();
  NetBase* pooled = ws.CreateNet(Oversubscribed(DagNetDef("pooled", {Sleep("p0", 0, 0)}, 2)));
  EXPECT_FALSE(dynamic_cast<DagNet*>(pooled)->runs_on_caller());
  pooled->Run();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records[0].thread, std::this_thread::get_id());
}

TEST(DagNetTest, EmptyNetRuns) {
  Workspace ws;
  ws.CreateNet(DagNetDef("empty", {}))->Run();
}

}  // namespace
}  // namespace doppio
