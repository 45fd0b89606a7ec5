// Intra-op thread counts: setters registered by libraries are applied per
// thread or per process, only on change; nets derive their count from the
// cores and their concurrency, or take the "intra_op_threads" argument, and
// apply it on the threads that run their ops.
#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/gradient.h"
#include "core/intra_op_threads.h"
#include "core/net_dag.h"
#include "core/net_simple.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;

// What the test "library" was told, per thread and for the process.
thread_local int thread_setting = 0;
std::atomic<int> thread_setter_calls{0};
std::atomic<int> process_setting{0};
std::atomic<int> process_setter_calls{0};

IntraOpThreadSetterRegisterer per_thread_setter("test per-thread", IntraOpSetterScope::kPerThread,
                                                [](int threads) {
                                                  thread_setting = threads;
                                                  ++thread_setter_calls;
                                                });
IntraOpThreadSetterRegisterer process_setter("test process", IntraOpSetterScope::kProcessWide,
                                             [](int threads) {
                                               process_setting = threads;
                                               ++process_setter_calls;
                                             });

// Writes the per-thread setting its thread had when it ran.
class ReportThreadsOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override {
    Output(0)->Resize({1});
    Output(0)->mutable_data<int64_t>()[0] = thread_setting;
  }
};
OPERATOR_SCHEMA(IntraTestReport).NumInputs(0).NumOutputs(1);
REGISTER_CPU_OPERATOR(IntraTestReport, ReportThreadsOp);
NO_GRADIENT(IntraTestReport, "test-only op");

int CoresByAffinity() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  EXPECT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  return CPU_COUNT(&cpus);
}

NetDef ReportNet(const std::string& name, const std::string& type, int devices,
                 const std::vector<Argument>& args = {}) {
  NetDef net;
  net.set_name(name);
  net.set_type(type);
  for (int d = 0; d < devices; ++d) {
    OperatorDef* op = net.add_op();
    *op = MakeOp("IntraTestReport", {}, {name + "_out" + std::to_string(d)});
    op->mutable_device_option()->set_cuda_gpu_id(d);
  }
  for (const Argument& arg : args) *net.add_arg() = arg;
  return net;
}

TEST(IntraOpThreadsTest, SettersRunOnlyWhenTheValueChanges) {
  ApplyIntraOpThreads(3);
  EXPECT_EQ(thread_setting, 3);
  EXPECT_EQ(process_setting.load(), 3);
  const int thread_calls = thread_setter_calls, process_calls = process_setter_calls;
  ApplyIntraOpThreads(3);
  EXPECT_EQ(thread_setter_calls.load(), thread_calls);
  EXPECT_EQ(process_setter_calls.load(), process_calls);

  // Another thread: its own per-thread call, but the process already has 3.
  std::thread([] {
    ApplyIntraOpThreads(3);
    EXPECT_EQ(thread_setting, 3);
  }).join();
  EXPECT_EQ(thread_setter_calls.load(), thread_calls + 1);
  EXPECT_EQ(process_setter_calls.load(), process_calls);

  ApplyIntraOpThreads(2);
  EXPECT_EQ(thread_setting, 2);
  EXPECT_EQ(process_setting.load(), 2);
  EXPECT_MESSAGE_HAS(ErrorOf([] { ApplyIntraOpThreads(0); }), "[1, 1024]", "got 0");
  EXPECT_MESSAGE_HAS(ErrorOf([] { ApplyIntraOpThreads(1025); }), "[1, 1024]", "got 1025");
  EXPECT_EQ(process_setting.load(), 2);  // the refused values reached no setter
}

TEST(IntraOpThreadsTest, DoppioNumCoresCapsTheCores) {
  const int cores = CoresByAffinity();
  ASSERT_EQ(setenv("DOPPIO_NUM_CORES", "1", 1), 0);
  EXPECT_EQ(AvailableCores(), 1);
  Workspace ws;
  auto* dag = dynamic_cast<DagNet*>(ws.CreateNet(ReportNet("capped", "dag", 1)));
  EXPECT_EQ(dag->intra_op_threads(), 1);
  // More than the affinity allows, or no count at all, changes nothing.
  for (const char* value : {"100000", "0", "-2", "two", "3x", ""}) {
    ASSERT_EQ(setenv("DOPPIO_NUM_CORES", value, 1), 0);
    EXPECT_EQ(AvailableCores(), cores) << "'" << value << "'";
  }
  ASSERT_EQ(unsetenv("DOPPIO_NUM_CORES"), 0);
  EXPECT_EQ(AvailableCores(), cores);
}

TEST(IntraOpThreadsTest, DefaultsDivideTheCoresAmongConcurrentWorkers) {
  const int cores = CoresByAffinity();
  EXPECT_EQ(AvailableCores(), cores);
  Workspace ws;
  auto* dag2 = dynamic_cast<DagNet*>(ws.CreateNet(ReportNet("dag2", "dag", 2)));
  EXPECT_EQ(dag2->intra_op_threads(), std::max(1, cores / 2));
  auto* dag2x3 = dynamic_cast<DagNet*>(
      ws.CreateNet(ReportNet("dag2x3", "dag", 2, {IntArg("num_workers", 3)})));
  EXPECT_EQ(dag2x3->intra_op_threads(), std::max(1, cores / 6));
  auto* simple1 = dynamic_cast<SimpleNet*>(ws.CreateNet(ReportNet("simple1", "simple", 1)));
  EXPECT_EQ(simple1->intra_op_threads(), cores);
  // A simple net over two devices divides as a dag net with one worker
  // per device would.
  auto* simple2 = dynamic_cast<SimpleNet*>(ws.CreateNet(ReportNet("simple2", "simple", 2)));
  EXPECT_EQ(simple2->intra_op_threads(), std::max(1, cores / 2));
}

TEST(IntraOpThreadsTest, NetsApplyTheirSettingOnTheThreadsThatRunOps) {
  Workspace ws;
  ws.CreateNet(ReportNet("dag", "dag", 3, {IntArg("intra_op_threads", 5)}))->Run();
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(ws.GetBlob("dag_out" + std::to_string(d))->GetTensor().data<int64_t>()[0], 5);
  }
  EXPECT_EQ(process_setting.load(), 5);
  ws.CreateNet(ReportNet("simple", "simple", 1, {IntArg("intra_op_threads", 7)}))->Run();
  EXPECT_EQ(ws.GetBlob("simple_out0")->GetTensor().data<int64_t>()[0], 7);
  EXPECT_EQ(thread_setting, 7);  // the simple net ran on this thread
}

TEST(IntraOpThreadsTest, ZeroMeansTheDefaultAndTheCapIsAllowed) {
  const int cores = CoresByAffinity();
  Workspace ws;
  auto* zero = dynamic_cast<DagNet*>(
      ws.CreateNet(ReportNet("zero", "dag", 2, {IntArg("intra_op_threads", 0)})));
  EXPECT_EQ(zero->intra_op_threads(), std::max(1, cores / 2));
  auto* capped = dynamic_cast<SimpleNet*>(
      ws.CreateNet(ReportNet("capped", "simple", 1, {IntArg("intra_op_threads", 1024)})));
  EXPECT_EQ(capped->intra_op_threads(), 1024);
}

TEST(IntraOpThreadsTest, BadSettingsNameTheNet) {
  Workspace ws;
  for (const char* type : {"dag", "simple"}) {
    EXPECT_MESSAGE_HAS(ErrorOf([&] {
                         ws.CreateNet(ReportNet("negative", type, 1,
                                                {IntArg("intra_op_threads", -1)}));
                       }),
                       "net 'negative'", "intra_op_threads", "[1, 1024]", "got -1");
    EXPECT_MESSAGE_HAS(ErrorOf([&] {
                         ws.CreateNet(ReportNet("many", type, 1,
                                                {IntArg("intra_op_threads", 1025)}));
                       }),
                       "net 'many'", "intra_op_threads", "[1, 1024]", "got 1025");
    EXPECT_MESSAGE_HAS(ErrorOf([&] {
                         ws.CreateNet(ReportNet("huge", type, 1,
                                                {IntArg("intra_op_threads", int64_t{1} << 40)}));
                       }),
                       "net 'huge'", "intra_op_threads", "got 1099511627776");
  }
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws.CreateNet(
                           ReportNet("text", "simple", 1, {StringArg("intra_op_threads", "all")}));
                     }),
                     "intra_op_threads", "net 'text'");
}

}  // namespace
}  // namespace doppio
