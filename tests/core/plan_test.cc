// Plans (core/plan): iteration counts, substep order, concurrency and error
// propagation, should_stop_blob, periodic report steps, child workspaces,
// concurrent instances, the Caffe2 PlanDef vector and malformed plans.
//
// Test-only ops record what ran (and when) in a global log, so every
// expectation below is written out by hand from Caffe2's plan semantics.
#include "core/plan.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using Clock = std::chrono::steady_clock;
using testing::ErrorIfAny;
using testing::ErrorOf;

// ---- what the test ops saw ----

struct Interval {
  std::string tag;
  Clock::time_point start, end;
};

class EventLog {
 public:
  static EventLog& Get() {
    static EventLog* log = new EventLog();
    return *log;
  }
  void Add(const std::string& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(event);
  }
  void AddInterval(Interval interval) {
    std::lock_guard<std::mutex> lock(mutex_);
    intervals_.push_back(std::move(interval));
  }
  std::vector<std::string> Events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }
  std::vector<Interval> Intervals() {
    std::lock_guard<std::mutex> lock(mutex_);
    return intervals_;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.clear();
    intervals_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> events_;
  std::vector<Interval> intervals_;
};

// Logs its "tag", or "tag=N" with the int64 counter of its optional input.
class PlanTestRecordOp final : public Operator<CPUContext> {
 public:
  PlanTestRecordOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws), tag_(GetSingleArgument<std::string>("tag", "")) {}
  void RunOnDevice() override {
    if (InputSize() == 0) {
      EventLog::Get().Add(tag_);
    } else {
      EventLog::Get().Add(tag_ + "=" + std::to_string(Input(0).data<int64_t>()[0]));
    }
  }

 private:
  std::string tag_;
};

// Sleeps "ms" milliseconds and logs the interval under "tag".
class PlanTestSleepOp final : public Operator<CPUContext> {
 public:
  PlanTestSleepOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws),
        ms_(GetSingleArgument<int>("ms", 0)),
        tag_(GetSingleArgument<std::string>("tag", "")) {}
  void RunOnDevice() override {
    const Clock::time_point start = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    EventLog::Get().AddInterval({tag_, start, Clock::now()});
  }

 private:
  int ms_;
  std::string tag_;
};

// Throws "message"; with an int64 counter input, only when it equals "at".
class PlanTestFailOp final : public Operator<CPUContext> {
 public:
  PlanTestFailOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws),
        message_(GetSingleArgument<std::string>("message", "PlanTestFail failed")),
        at_(GetSingleArgument<int64_t>("at", 0)) {}
  void RunOnDevice() override {
    if (InputSize() == 0 || Input(0).data<int64_t>()[0] == at_) DOPPIO_THROW(message_);
  }

 private:
  std::string message_;
  int64_t at_;
};

OPERATOR_SCHEMA(PlanTestRecord).NumInputs(0, 1).NumOutputs(0);
OPERATOR_SCHEMA(PlanTestSleep).NumInputs(0).NumOutputs(0);
OPERATOR_SCHEMA(PlanTestFail).NumInputs(0, 1).NumOutputs(0);
REGISTER_CPU_OPERATOR(PlanTestRecord, PlanTestRecordOp);
REGISTER_CPU_OPERATOR(PlanTestSleep, PlanTestSleepOp);
REGISTER_CPU_OPERATOR(PlanTestFail, PlanTestFailOp);
SHOULD_NOT_DO_GRADIENT(PlanTestRecord, "test-only bookkeeping op");
SHOULD_NOT_DO_GRADIENT(PlanTestSleep, "test-only timing op");
SHOULD_NOT_DO_GRADIENT(PlanTestFail, "test-only failing op");

// ---- helpers ----

PlanDef ParsePlan(const std::string& text) {
  PlanDef plan;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &plan)) << text;
  return plan;
}

int Count(const std::vector<std::string>& events, const std::string& event) {
  return static_cast<int>(std::count(events.begin(), events.end(), event));
}

int64_t Int64Blob(Workspace& ws, const std::string& name) {
  return ws.GetBlob(name)->GetTensor().data<int64_t>()[0];
}

// Whether every interval overlaps every other: the latest start precedes
// the earliest end.
bool AllOverlap(const std::vector<Interval>& intervals) {
  Clock::time_point latest_start = Clock::time_point::min();
  Clock::time_point earliest_end = Clock::time_point::max();
  for (const Interval& interval : intervals) {
    latest_start = std::max(latest_start, interval.start);
    earliest_end = std::min(earliest_end, interval.end);
  }
  return latest_start < earliest_end;
}

// The error `fn` throws (or ""), failing the whole test binary if `fn` has
// not returned within `seconds`: a hung plan must not stall until Bazel's
// timeout without saying which test hung.
std::string ErrorWithin(double seconds, std::function<void()> fn) {
  auto result = std::make_shared<std::promise<std::string>>();
  std::future<std::string> done = result->get_future();
  std::thread runner([result, fn] { result->set_value(ErrorIfAny(fn)); });
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "%s: the plan did not finish within %.0f s\n",
                 ::testing::UnitTest::GetInstance()->current_test_info()->name(), seconds);
    std::_Exit(1);
  }
  runner.join();
  return done.get();
}

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override { EventLog::Get().Clear(); }
  std::vector<std::string> Events() { return EventLog::Get().Events(); }
  Workspace ws_;
};

// Nets shared by several tests: "init" makes five (int64) and a false bool
// stop flag, "record_X" logs X, "count" bumps the int64 counter "it".
const char* kCommonNets = R"(
  network { name: "init"
    op { type: "ConstantFill" output: "five"
         arg { name: "shape" ints: 1 } arg { name: "dtype" i: 10 } arg { name: "value" i: 5 } }
    op { type: "ConstantFill" output: "never"
         arg { name: "shape" ints: 1 } arg { name: "dtype" i: 5 } arg { name: "value" i: 0 } } }
  network { name: "count" op { type: "Iter" output: "it" } }
  network { name: "count_to_five"
    op { type: "Iter" output: "it" } op { type: "EQ" input: "it" input: "five" output: "stop" } }
  network { name: "record_a" op { type: "PlanTestRecord" arg { name: "tag" s: "a" } } }
  network { name: "record_b" op { type: "PlanTestRecord" arg { name: "tag" s: "b" } } }
  network { name: "record_c" op { type: "PlanTestRecord" arg { name: "tag" s: "c" } } }
  network { name: "spin" op { type: "PlanTestSleep" arg { name: "ms" i: 5 } } }
  execution_step { name: "init" network: "init" }
)";

PlanDef CommonPlan(const std::string& steps) {
  return ParsePlan(std::string("name: \"p\" ") + kCommonNets + steps);
}

// ---- counting and order ----

TEST_F(PlanTest, NumIterCountsRunsAndDefaultsToOne) {
  ws_.RunPlan(
      CommonPlan(R"(execution_step { name: "seven" network: "count" num_iter: 7 })"));
  EXPECT_EQ(Int64Blob(ws_, "it"), 7);
  ws_.RunPlan(CommonPlan(R"(execution_step { name: "once" network: "count" })"));
  EXPECT_EQ(Int64Blob(ws_, "it"), 8);
  ws_.RunPlan(
      CommonPlan(R"(execution_step { name: "none" network: "count" num_iter: 0 })"));
  EXPECT_EQ(Int64Blob(ws_, "it"), 8);
}

TEST_F(PlanTest, NetworksAndNestedSubstepsRunInOrder) {
  ws_.RunPlan(CommonPlan(R"(
    execution_step { name: "outer" num_iter: 2
      substep { name: "a" network: "record_a" num_iter: 2 }
      substep { name: "bc" substep { name: "b" network: "record_b" }
                           substep { name: "c" network: "record_c" network: "record_a" } } })"));
  const std::vector<std::string> expected = {"a", "a", "b", "c", "a",
                                             "a", "a", "b", "c", "a"};
  EXPECT_EQ(Events(), expected);
}

TEST_F(PlanTest, PlanNetReplacesAnExistingNetOfTheSameName) {
  NetDef old_net;
  old_net.set_name("record_a");
  *old_net.add_op() =
      testing::MakeOp("PlanTestRecord", {}, {}, {testing::StringArg("tag", "old")});
  ws_.CreateNet(old_net);
  ws_.RunPlan(CommonPlan(R"(execution_step { network: "record_a" num_iter: 2 })"));
  EXPECT_EQ(Events(), std::vector<std::string>({"a", "a"}));
}

TEST_F(PlanTest, ShouldContinueCallbackEndsThePlanQuietly) {
  RunPlan(CommonPlan(R"(execution_step { name: "long" network: "count" num_iter: 100 })"),
          &ws_, [](int64_t iteration) { return iteration < 3; });
  EXPECT_EQ(Int64Blob(ws_, "it"), 3);
}

// ---- should_stop_blob ----

TEST_F(PlanTest, ShouldStopBlobIsCheckedAfterEveryNet) {
  // "it" reaches 5 in iteration #4, right after count_to_five; record_a ran
  // in iterations #0..#3 only.
  ws_.RunPlan(CommonPlan(R"(execution_step { name: "loop" should_stop_blob: "stop"
                              network: "count_to_five" network: "record_a" })"));
  EXPECT_EQ(Int64Blob(ws_, "it"), 5);
  EXPECT_EQ(Count(Events(), "a"), 4);
}

TEST_F(PlanTest, ShouldStopBlobIsCheckedAfterEverySubstep) {
  ws_.RunPlan(CommonPlan(R"(execution_step { name: "loop" should_stop_blob: "stop"
                              substep { name: "c" network: "count_to_five" }
                              substep { name: "r" network: "record_a" } })"));
  EXPECT_EQ(Int64Blob(ws_, "it"), 5);
  EXPECT_EQ(Count(Events(), "a"), 4);
}

TEST_F(PlanTest, OnlyOnceRunsAStopControlledStepOnce) {
  ws_.RunPlan(CommonPlan(R"(execution_step { name: "once" should_stop_blob: "never"
                              only_once: true network: "record_a" })"));
  EXPECT_EQ(Events(), std::vector<std::string>({"a"}));
}

TEST_F(PlanTest, ShouldStopBlobMustBeABoolScalarThatExists) {
  const std::string float_flag = R"(
    network { name: "float_flag" op { type: "ConstantFill" output: "flag"
                                      arg { name: "shape" ints: 1 } arg { name: "value" f: 1 } } }
    execution_step { name: "loop" should_stop_blob: "flag" network: "float_flag" })";
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws_.RunPlan(CommonPlan(float_flag)); }),
                     "should_stop_blob 'flag'", "execution step 'loop'", "float",
                     "bool scalar");
  const std::string two_bools = R"(
    network { name: "two_bools" op { type: "ConstantFill" output: "flags"
      arg { name: "shape" ints: 2 } arg { name: "dtype" i: 5 } arg { name: "value" i: 1 } } }
    execution_step { name: "loop" should_stop_blob: "flags" network: "two_bools" })";
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws_.RunPlan(CommonPlan(two_bools)); }),
                     "should_stop_blob 'flags'", "[2]", "bool scalar");
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ws_.RunPlan(CommonPlan(R"(execution_step { name: "loop"
                         should_stop_blob: "no_such_flag" network: "record_a" })"));
                     }),
                     "should_stop_blob 'no_such_flag'", "execution step 'loop'",
                     "does not exist");
  EXPECT_EQ(Count(Events(), "a"), 0);
}

// ---- concurrency ----

const char* kSleepNets = R"(
  network { name: "sleep_a" op { type: "PlanTestSleep"
                                 arg { name: "ms" i: 300 } arg { name: "tag" s: "a" } } }
  network { name: "sleep_b" op { type: "PlanTestSleep"
                                 arg { name: "ms" i: 300 } arg { name: "tag" s: "b" } } })";

TEST_F(PlanTest, ConcurrentSubstepsOverlapAndSequentialOnesDoNot) {
  const std::string substeps =
      R"(substep { name: "a" network: "sleep_a" } substep { name: "b" network: "sleep_b" })";
  ws_.RunPlan(CommonPlan(kSleepNets +
                         std::string("execution_step { name: \"both\" "
                                     "concurrent_substeps: true ") +
                         substeps + "}"));
  ASSERT_EQ(EventLog::Get().Intervals().size(), 2u);
  EXPECT_TRUE(AllOverlap(EventLog::Get().Intervals()));

  EventLog::Get().Clear();
  ws_.RunPlan(CommonPlan(kSleepNets + std::string("execution_step { name: \"both\" ") +
                         substeps + "}"));
  ASSERT_EQ(EventLog::Get().Intervals().size(), 2u);
  EXPECT_FALSE(AllOverlap(EventLog::Get().Intervals()));
}

TEST_F(PlanTest, ConcurrentFailureStopsEndlessSiblingsAndSurfaces) {
  // "forever" nests a million-iteration loop inside a loop no blob stops:
  // only the failure of "bad" can end it.
  const PlanDef plan = CommonPlan(R"(
    network { name: "fail" op { type: "PlanTestSleep" arg { name: "ms" i: 50 } }
                           op { type: "PlanTestFail" arg { name: "message" s: "boom in bad" } } }
    execution_step { name: "par" concurrent_substeps: true
      substep { name: "bad" network: "fail" }
      substep { name: "forever" should_stop_blob: "never"
                substep { name: "inner" network: "spin" num_iter: 1000000 } } })");
  const Clock::time_point start = Clock::now();
  const std::string message = ErrorWithin(20, [&] { ws_.RunPlan(plan); });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 10.0);
  EXPECT_MESSAGE_HAS(message, "boom in bad", "PlanTestFail", "network 'fail'",
                     "execution step 'par/bad'", "plan 'p'");
}

TEST_F(PlanTest, NumConcurrentInstancesRunCopiesInTheirOwnWorkspaces) {
  // Each copy counts in its own child workspace, so each sees local=1.
  ws_.RunPlan(CommonPlan(R"(
    network { name: "work"
      op { type: "Iter" output: "local" }
      op { type: "PlanTestSleep" arg { name: "ms" i: 300 } arg { name: "tag" s: "w" } }
      op { type: "PlanTestRecord" input: "local" arg { name: "tag" s: "local" } } }
    execution_step { name: "pool" num_concurrent_instances: 3
                     substep { name: "worker" network: "work" } })"));
  ASSERT_EQ(EventLog::Get().Intervals().size(), 3u);
  EXPECT_TRUE(AllOverlap(EventLog::Get().Intervals()));
  EXPECT_EQ(Events(), std::vector<std::string>({"local=1", "local=1", "local=1"}));
  EXPECT_FALSE(ws_.HasBlob("local"));
}

TEST_F(PlanTest, InstancesMultiplyConcurrentSubsteps) {
  ws_.RunPlan(CommonPlan(kSleepNets + std::string(R"(
    execution_step { name: "grid" concurrent_substeps: true num_concurrent_instances: 2
      substep { name: "a" network: "sleep_a" } substep { name: "b" network: "sleep_b" } })")));
  const std::vector<Interval> intervals = EventLog::Get().Intervals();
  ASSERT_EQ(intervals.size(), 4u);
  EXPECT_EQ(std::count_if(intervals.begin(), intervals.end(),
                          [](const Interval& i) { return i.tag == "a"; }),
            2);
  EXPECT_TRUE(AllOverlap(intervals));
}

// ---- periodic report steps ----

const char* kWorkNets = R"(
  network { name: "report" op { type: "PlanTestRecord" arg { name: "tag" s: "report" } } }
  network { name: "work" op { type: "PlanTestSleep" arg { name: "ms" i: 40 } }
                         op { type: "PlanTestRecord" arg { name: "tag" s: "work" } } })";

// Reports ran while the work ran, and the last event is a report.
void ExpectPeriodicAndFinalReports(const std::vector<std::string>& events,
                                   int min_reports) {
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "report");
  EXPECT_GE(Count(events, "report"), min_reports);
  const auto last_work = std::find(events.rbegin(), events.rend(), "work");
  ASSERT_NE(last_work, events.rend());
  EXPECT_NE(std::find(last_work, events.rend(), "report"), events.rend())
      << "no report ran before the work finished";
}

TEST_F(PlanTest, RunEveryMsRunsPeriodicallyAndOnceAfterSiblingsEnd) {
  // The work takes >= 400 ms; a 50 ms report fires several times meanwhile.
  ws_.RunPlan(CommonPlan(kWorkNets + std::string(R"(
    execution_step { name: "main"
      substep { name: "reporter" run_every_ms: 50 network: "report" }
      substep { name: "work" network: "work" num_iter: 10 } })")));
  ExpectPeriodicAndFinalReports(Events(), 3);
  EXPECT_EQ(Count(Events(), "work"), 10);
}

TEST_F(PlanTest, ReportNetRunsEveryReportIntervalSeconds) {
  ws_.RunPlan(CommonPlan(kWorkNets + std::string(R"(
    execution_step { name: "main" network: "work" num_iter: 50
                     report_net: "report" report_interval: 1 })")));
  ExpectPeriodicAndFinalReports(Events(), 2);
}

TEST_F(PlanTest, FailingReportStepStopsThePlan) {
  const PlanDef plan = CommonPlan(R"(
    network { name: "bad_report"
              op { type: "PlanTestFail" arg { name: "message" s: "report broke" } } }
    execution_step { name: "main"
      substep { name: "reporter" run_every_ms: 20 network: "bad_report" }
      substep { name: "work" should_stop_blob: "never" network: "spin" } })");
  EXPECT_MESSAGE_HAS(ErrorWithin(20, [&] { ws_.RunPlan(plan); }), "report broke",
                     "execution step 'main/reporter'", "network 'bad_report'");
}

// ---- workspaces ----

TEST_F(PlanTest, CreateWorkspaceGivesEachExecutionFreshLocalBlobs) {
  const std::string nets = R"(
    network { name: "make_shared" op { type: "ConstantFill" output: "shared"
                                       arg { name: "shape" ints: 1 } arg { name: "value" f: 1 } } }
    network { name: "body"
      op { type: "Iter" output: "count" }
      op { type: "PlanTestRecord" input: "count" arg { name: "tag" s: "count" } }
      op { type: "ConstantFill" output: "shared"
           arg { name: "shape" ints: 1 } arg { name: "value" f: 7 } } }
    execution_step { name: "make" network: "make_shared" })";
  ws_.RunPlan(CommonPlan(nets + R"(execution_step { name: "outer" num_iter: 3
      substep { name: "fresh" create_workspace: true network: "body" } })"));
  EXPECT_EQ(Events(), std::vector<std::string>({"count=1", "count=1", "count=1"}));
  EXPECT_FALSE(ws_.HasBlob("count"));
  EXPECT_EQ(ws_.GetBlob("shared")->GetTensor().data<float>()[0], 7.0f);  // parent's blob
  const std::vector<std::string> nets_here = ws_.Nets();
  EXPECT_EQ(std::count(nets_here.begin(), nets_here.end(), "body"), 0);

  // The same plan without create_workspace keeps one counter.
  EventLog::Get().Clear();
  ws_.RunPlan(CommonPlan(nets + R"(execution_step { name: "outer" num_iter: 3
      substep { name: "shared" network: "body" } })"));
  EXPECT_EQ(Events(), std::vector<std::string>({"count=1", "count=2", "count=3"}));
}

// ---- errors ----

TEST_F(PlanTest, NetErrorsNameTheStepPathNetAndIteration) {
  const std::string message = ErrorOf([&] {
    ws_.RunPlan(CommonPlan(R"(
      network { name: "flaky" op { type: "Iter" output: "n" }
        op { type: "PlanTestFail" input: "n" arg { name: "at" i: 3 }
             arg { name: "message" s: "third time unlucky" } } }
      execution_step { name: "outer" substep { name: "inner" network: "flaky" num_iter: 5 } })"));
  });
  EXPECT_MESSAGE_HAS(message, "third time unlucky", "network 'flaky'",
                     "execution step 'outer/inner', iteration 2", "plan 'p'");
}

TEST_F(PlanTest, MalformedPlansAreRefusedBeforeAnythingRuns) {
  struct Case {
    std::string steps;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {R"(execution_step { name: "mixed" network: "record_a" substep { network: "record_b" } })",
       {"execution step 'mixed'", "both substeps and networks"}},
      {R"(execution_step { name: "outer" substep { name: "typo" network: "recrod_a" } })",
       {"execution step 'outer/typo'", "network 'recrod_a'", "does not define",
        "record_a"}},
      {R"(execution_step { name: "neg" network: "record_a" num_iter: -1 })",
       {"execution step 'neg'", "num_iter -1"}},
      {R"(execution_step { name: "both" network: "count_to_five" num_iter: 3
                           should_stop_blob: "stop" })",
       {"execution step 'both'", "num_iter and should_stop_blob"}},
      {R"(execution_step { name: "crit" network: "record_a" criteria_network: "record_b" })",
       {"execution step 'crit'", "criteria_network 'record_b'", "not support"}},
      {R"(execution_step { name: "rep" network: "record_a" report_net: "record_b" })",
       {"execution step 'rep'", "report_interval"}},
      {R"(execution_step { name: "rep" network: "record_a" report_net: "nope"
                           report_interval: 1 })",
       {"execution step 'rep'", "report_net 'nope'"}},
      {R"(execution_step { substep { name: "tick" run_every_ms: 0 network: "record_a" } })",
       {"execution step '#2/tick'", "run_every_ms 0"}},
      {R"(execution_step { name: "inst" num_concurrent_instances: -2
                           substep { network: "record_a" } })",
       {"execution step 'inst'", "num_concurrent_instances -2"}},
      {R"(execution_step { name: "o" only_once: true network: "record_a" })",
       {"execution step 'o'", "only_once without should_stop_blob"}},
      {R"(execution_step { name: "empty_loop" should_stop_blob: "never" })",
       {"execution step 'empty_loop'", "no networks or substeps"}},
      {R"(network { name: "record_a" } execution_step { network: "record_a" })",
       {"network 'record_a' more than once"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.steps);
    EventLog::Get().Clear();
    // The init step and a recording step come first: neither may run.
    const PlanDef plan = CommonPlan(R"(execution_step { network: "record_c" } )" + c.steps);
    const std::string message = ErrorOf([&] { ws_.RunPlan(plan); });
    for (const std::string& part : c.expected) EXPECT_MESSAGE_HAS(message, part);
    EXPECT_MESSAGE_HAS(message, "plan 'p'");
    EXPECT_TRUE(Events().empty());
    EXPECT_MESSAGE_HAS(ErrorOf([&] { ValidatePlan(plan); }), c.expected.front());
  }
}

// ---- the Caffe2 vector ----

TEST_F(PlanTest, Caffe2PlanVectorParsesAndFailsClearlyOnItsUndefinedNet) {
  const std::string bytes = testing::ReadBytes(testing::VectorPath("plandef.pb"));
  PlanDef plan;
  ASSERT_TRUE(plan.ParseFromString(bytes));
  PlanDef from_text;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      testing::ReadBytes(testing::VectorPath("plandef.pbtxt")), &from_text));
  EXPECT_EQ(from_text.SerializeAsString(), bytes);

  EXPECT_EQ(plan.name(), "train_plan");
  ASSERT_EQ(plan.network_size(), 2);
  EXPECT_EQ(plan.network(0).name(), "train_net");
  ASSERT_EQ(plan.network(0).op_size(), 2);
  EXPECT_EQ(plan.network(0).op(0).type(), "FC");
  EXPECT_EQ(plan.network(0).op(1).type(), "NCCLAllreduce");
  EXPECT_EQ(plan.network(1).name(), "then_net");
  ASSERT_EQ(plan.execution_step_size(), 2);
  const ExecutionStep& init = plan.execution_step(0);
  EXPECT_EQ(init.name(), "init");
  EXPECT_EQ(std::vector<std::string>(init.network().begin(), init.network().end()),
            std::vector<std::string>({"init_net"}));
  EXPECT_EQ(init.num_iter(), 1);
  const ExecutionStep& train = plan.execution_step(1);
  EXPECT_EQ(train.name(), "train");
  ASSERT_EQ(train.substep_size(), 1);
  EXPECT_EQ(train.substep(0).name(), "iter");
  EXPECT_EQ(train.substep(0).network(0), "train_net");
  EXPECT_EQ(train.substep(0).num_iter(), 100);
  EXPECT_TRUE(train.concurrent_substeps());
  EXPECT_EQ(train.report_net(), "report");
  EXPECT_EQ(train.report_interval(), 10);
  EXPECT_EQ(train.should_stop_blob(), "stop");
  EXPECT_TRUE(train.has_only_once());
  EXPECT_FALSE(train.only_once());
  EXPECT_EQ(train.run_every_ms(), 500);
  EXPECT_TRUE(train.create_workspace());
  EXPECT_EQ(train.num_concurrent_instances(), 2);

  // Its "init" step names a net the plan does not define.
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ws_.RunPlan(plan); }), "execution step 'init'",
                     "network 'init_net'", "plan 'train_plan'");
}

TEST_F(PlanTest, Caffe2PlanVectorRunsOnceItsNetsAreMadeRunnable) {
  PlanDef plan;
  ASSERT_TRUE(plan.ParseFromString(testing::ReadBytes(testing::VectorPath("plandef.pb"))));
  ASSERT_EQ(plan.network_size(), 2);
  // Same steps; CPU nets in place of the GPU ones and the two it lacks. The
  // stop flag starts true, so "train" runs one iteration: 2 instances of
  // "iter", 100 runs of train_net each.
  NetDef* train_net = plan.mutable_network(0);
  train_net->Clear();
  train_net->set_name("train_net");
  *train_net->add_op() =
      testing::MakeOp("PlanTestRecord", {}, {}, {testing::StringArg("tag", "train")});
  ASSERT_TRUE(google::protobuf::TextFormat::MergeFromString(R"(
      network { name: "init_net" op { type: "ConstantFill" output: "stop"
        arg { name: "shape" ints: 1 } arg { name: "dtype" i: 5 } arg { name: "value" i: 1 } } }
      network { name: "report"
                op { type: "PlanTestRecord" arg { name: "tag" s: "report" } } })",
                                                            &plan));
  ASSERT_EQ(plan.network_size(), 4);
  ASSERT_EQ(plan.execution_step_size(), 2);

  EXPECT_EQ(ErrorWithin(30, [&] { ws_.RunPlan(plan); }), "");
  const std::vector<std::string> events = Events();
  EXPECT_EQ(Count(events, "train"), 200);
  EXPECT_GE(Count(events, "report"), 1);
  EXPECT_EQ(events.back(), "report");
}

}  // namespace
}  // namespace doppio
