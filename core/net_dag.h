// DagNet (net types "dag" and "async_dag"): runs each op as soon as the ops
// it depends on are done, on a worker pool per device.
//
// Dependencies come from the blobs ops name (see OpDependencies) and from
// control_input. Results are those of SimpleNet for any schedule, provided
// ops touch only the blobs they name (an op that reaches other blobs by name
// at run time, as Load or Save may, must be ordered with control_input).
//
// Devices: an op's device is its DeviceOption's (device_type, cuda_gpu_id).
// As in Caffe2, whose Python DeviceOption(device_type, id) stores every
// device's id in cuda_gpu_id, CPU ids there are logical devices: cpu_0 and
// cpu_1 get separate pools, so their ops run at the same time.
//
// Workers: the "num_workers" NetDef argument, else the NetDef's num_workers
// field, else 1, sets the workers of EACH device's pool (Caffe2's
// data_parallel_model sets a total; here every device gets that many, which
// only adds idle threads). It caps concurrency, as in Caffe2, but a CPU
// device's pool never gets more workers than its share of the cores
// (max(1, AvailableCores() / CPU devices)): more runnable threads than cores
// only take turns, and Caffe2's default of 4 per device halved the training
// speed of 2 devices on 2 cores. The net argument
// "allow_worker_oversubscription" = 1 keeps the asked-for count (ops that
// block waiting for each other need it); CUDA pools always keep it, as
// their workers drive streams. A worker that finishes an op runs one newly
// ready successor on the same device itself, so a chain of ops stays on one
// thread with warm caches; other ready ops go to their device's queue.
//
// One device with one worker: its ops run one after another anyway, so
// Run() runs them itself, in the NetDef's order (a topological order of the
// dependencies), and the net starts no thread. Handing each run to a worker
// and sleeping until it is done cost two thread wake-ups per run, and with
// intra-op threads spinning on every core a woken thread waits for a core:
// ~0.2 ms per run of the reference MLP, whose training step is 0.4 ms.
//
// Intra-op threads: IntraOpThreadsForNet with one concurrent op per worker,
// applied on each worker (on the calling thread when Run() runs the ops
// itself; see core/intra_op_threads.h).
//
// Device streams (core/event_schedule.h): worker w of a device runs that
// device's async ops on stream w without a host sync; an op that runs on
// another stream than a parent it depends on waits for the parent's event
// (on the device, or on the host for a host op), and Run() drains every
// stream the run used before it returns.
//
// Errors: the first op that fails stops the scheduling of new ops; Run()
// waits for the ops already running (and their device work), then rethrows
// that op's error with its context. A failed kernel found when the streams
// are drained is reported the same way. The net can run again afterwards.
//
// Threading: one Run() at a time; Run() blocks until the net is done. The
// pools belong to the net, so a net run from inside another net's op never
// waits for its own workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/thread_pool.h"

namespace doppio {

// How a dag net will run its ops, worked out from the NetDef alone (DagNet
// builds itself from it; data_parallel_model reports it): one pool per
// device, in the order ops first use them, each pool's workers after the
// CPU cap, and the intra-op threads per op. A value; print it with
// ToString().
struct DagThreadPlan {
  std::vector<std::string> devices;  // "cpu_0", "gpu_1", ...
  std::vector<bool> is_cpu;          // per device
  std::vector<int> device_of_op;     // per op, an index into devices
  int cores = 1;                     // AvailableCores() when planned
  std::vector<int> workers;          // per device; 0 when runs_on_caller
  int requested_workers = 1;         // num_workers per device, as the net asks
  int intra_op_threads = 1;
  bool runs_on_caller = false;
  // "2 device pools (cpu_0, cpu_1) x 1 worker (num_workers 4, capped to 2
  // cores), 1 intra-op thread per op".
  std::string ToString() const;
};

// The plan of `net` (errors as DagNet's: bad num_workers, too many threads).
DagThreadPlan PlanDagThreads(const NetDef& net);

// Whether nets of this type run on the dag executor.
bool IsDagNetType(const std::string& type);

class DagNet final : public NetBase {
 public:
  DagNet(const NetDef& def, Workspace* workspace);
  ~DagNet() override;
  void Run() override;
  const std::vector<std::unique_ptr<OperatorBase>>& operators() const override {
    return operators_;
  }

  int num_devices() const { return static_cast<int>(plan_.devices.size()); }
  // Worker threads of device `device`'s pool (0 when Run() runs the ops).
  int pool_workers(int device) const { return plan_.workers.at(device); }
  // True when Run() runs the ops on the calling thread (one device, one
  // worker) rather than on worker threads.
  bool runs_on_caller() const { return plan_.runs_on_caller; }
  int workers_per_device() const { return plan_.requested_workers; }
  int intra_op_threads() const { return plan_.intra_op_threads; }
  // Null when no op uses device streams.
  const StreamScheduler* stream_scheduler() const { return streams_.get(); }
  // "cpu_1", "gpu_0": the device (and pool name) of op `index`.
  const std::string& device_label(int index) const;

 private:
  // Runs every op on the calling thread, in the NetDef's order.
  void RunOnCaller();
  // Runs `op`, then (while they become ready on its device) one successor
  // after another on this thread.
  void RunChain(int op);
  void CheckOneStreamDevicePerPool() const;
  void ReleaseSuccessors(int op, int* inline_next);
  // Counts `op` as outstanding and queues it.
  void Schedule(int op);
  // Queues an op already counted as outstanding.
  void Submit(int op);
  void RecordError(std::exception_ptr error);
  // One ready op is done or skipped; the last one ends the run.
  void FinishOne();

  std::vector<std::unique_ptr<OperatorBase>> operators_;
  std::vector<std::vector<int>> successors_;
  std::vector<int> initial_pending_;
  std::vector<int> roots_;
  // Devices of the ops, pools, workers, intra-op threads; fixed at creation.
  // plan_.runs_on_caller (one device, one worker): Run() runs the ops
  // itself and pools_ is empty.
  DagThreadPlan plan_;

  // Per run.
  std::unique_ptr<std::atomic<int>[]> pending_;
  std::atomic<int> outstanding_{0};
  std::atomic<bool> stop_{false};
  std::mutex run_mutex_;
  std::condition_variable run_finished_;
  bool finished_ = false;
  std::exception_ptr first_error_;

  std::unique_ptr<StreamScheduler> streams_;

  // Last: the workers stop before anything they use is destroyed. Empty
  // when the ops run on the caller.
  std::vector<std::unique_ptr<ThreadPool>> pools_;
};

}  // namespace doppio
