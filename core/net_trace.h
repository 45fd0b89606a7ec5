// Net profiling: per-op and per-net timing, and a Chrome trace of one run.
//
// NetProfiler attaches to a net as its op observer and runs it; it sums the
// wall time of each op and of each whole run, keeps the events of the last
// run, and renders them as chrome://tracing (Trace Event Format) JSON: one
// complete ("X") event per op with its name, type, device, worker thread,
// start and duration, plus one event for the whole run; each collective
// also appears on a "collectives" track (category "collective", its bytes
// in args).
//
// Thread-safety: the net serializes observer calls (core/net.h), and the
// profiler's results are read after Run() returns; do not share one
// profiler between threads.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/net.h"

namespace doppio {

struct OpTraceEvent {
  int op_index = 0;
  std::string name;    // the op's name, or its type when it has none
  std::string type;
  std::string device;  // "cpu_0", "gpu_1"
  std::string thread;  // "cpu_0/worker 1", or "caller" off the worker pools
  double start_us = 0;  // from the start of the run
  double duration_us = 0;
  // A collective (IsCollectiveOp), and the bytes of the tensors it reads.
  bool collective = false;
  int64_t bytes = 0;
};

// Ops that move data between devices or processes, by Caffe2's names:
// engine GLOO, NCCL*, and Allreduce / AllreduceCoalesced / Broadcast /
// Allgather / ReduceScatter / Barrier / CreateCommonWorld /
// VerifyCollectiveSchedule. Traces put them on a "collectives" track of
// their own, beside the compute threads, with their bytes.
bool IsCollectiveOp(const OperatorDef& def);

class NetProfiler {
 public:
  // Becomes `net`'s op observer (replacing any) until destroyed. `net` must
  // outlive the profiler.
  explicit NetProfiler(NetBase* net);
  ~NetProfiler();
  NetProfiler(const NetProfiler&) = delete;
  NetProfiler& operator=(const NetProfiler&) = delete;

  // Runs the net `iterations` times, timing each run. Errors propagate; the
  // ops that ran before one are still counted.
  void Run(int iterations = 1);

  int runs() const { return runs_; }
  // Wall time of all runs together.
  double net_seconds() const { return net_seconds_; }
  // Summed wall time per op index over all runs.
  const std::vector<double>& op_seconds() const { return op_seconds_; }
  // Events of the most recent run, in the order the ops finished.
  const std::vector<OpTraceEvent>& last_run_events() const { return events_; }
  double last_run_us() const { return last_run_us_; }

  // Time per op type, most expensive first, with counts, per-run averages
  // and shares: the table `run_net --report_per_op` prints.
  std::string PerOpTypeReport() const;
  // The last run as chrome://tracing JSON.
  std::string ChromeTraceJson() const;

 private:
  void Record(const NetBase::OpEvent& event);

  NetBase* net_;
  int runs_ = 0;
  double net_seconds_ = 0;
  std::vector<double> op_seconds_;
  std::vector<OpTraceEvent> events_;
  std::chrono::steady_clock::time_point run_start_;
  double last_run_us_ = 0;
};

// "cpu_1" for DeviceOption(CPU, 1), "gpu_0" for CUDA 0: how traces and the
// dag executor name devices.
std::string DeviceLabel(const DeviceOption& option);

// Runs `net` once under a NetProfiler and writes the Chrome trace to `path`;
// a file that cannot be written is an error naming it.
void WriteChromeTrace(NetBase* net, const std::string& path);

}  // namespace doppio
