#include "core/net_dag.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "core/argument.h"
#include "core/event_schedule.h"
#include "core/intra_op_threads.h"
#include "core/net_trace.h"

namespace doppio {
namespace {

// Worker threads of one dag net, over all its devices. NetDefs come from
// files: num_workers = 2^31 (or thousands of distinct device options) must
// fail, not exhaust memory starting threads.
constexpr int64_t kMaxWorkerThreads = 1024;

int WorkersPerDevice(const NetDef& net) {
  ArgumentHelper args(net);
  int workers = 1;
  std::string source;
  if (args.Has("num_workers")) {
    try {
      workers = args.GetSingle<int>("num_workers", 1);
    } catch (Error& error) {
      error.AppendContext("in the arguments of net '" + net.name() + "'");
      throw;
    }
    source = "argument num_workers";
  } else {
    // The field is deprecated in favour of the argument but still honoured,
    // as Caffe2 nets set it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    if (net.has_num_workers()) {
      workers = net.num_workers();
      source = "field num_workers";
    }
#pragma GCC diagnostic pop
  }
  DOPPIO_ENFORCE(workers >= 1, "net '", net.name(), "': ", source,
                 " must be >= 1 (workers per device), got ", workers);
  return workers;
}

// Workers per device pool: `requested` each, but a CPU device gets at most
// its share of the cores unless the net allows oversubscription.
std::vector<int> PoolWorkers(const NetDef& net, const std::vector<bool>& is_cpu, int requested,
                             int cores) {
  const bool oversubscribe =
      ArgumentHelper(net).GetSingle<int>("allow_worker_oversubscription", 0) != 0;
  const int cpu_devices = static_cast<int>(std::count(is_cpu.begin(), is_cpu.end(), true));
  const int cpu_share = std::max(1, cores / std::max(1, cpu_devices));
  std::vector<int> workers;
  for (bool cpu : is_cpu) {
    workers.push_back(cpu && !oversubscribe ? std::min(requested, cpu_share) : requested);
  }
  return workers;
}

// Device of each op (an index into `labels`, which lists devices in the
// order ops first use them) and whether each device is a CPU.
std::vector<int> DevicesOfOps(const NetDef& net, std::vector<std::string>* labels,
                              std::vector<bool>* is_cpu) {
  std::map<std::pair<int, int>, int> device_index;
  std::vector<int> device_of_op(net.op_size());
  for (int i = 0; i < net.op_size(); ++i) {
    const DeviceOption& option = net.op(i).device_option();
    const std::pair<int, int> device(option.device_type(), option.cuda_gpu_id());
    auto inserted = device_index.emplace(device, static_cast<int>(labels->size()));
    if (inserted.second) {
      labels->push_back(DeviceLabel(option));
      is_cpu->push_back(DeviceFromOption(option).kind == DeviceKind::kCPU);
    }
    device_of_op[i] = inserted.first->second;
  }
  return device_of_op;
}

}  // namespace

DagThreadPlan PlanDagThreads(const NetDef& net) {
  DagThreadPlan plan;
  plan.requested_workers = WorkersPerDevice(net);
  plan.device_of_op = DevicesOfOps(net, &plan.devices, &plan.is_cpu);
  plan.cores = AvailableCores();
  const int devices = std::max<int>(1, static_cast<int>(plan.devices.size()));
  DOPPIO_ENFORCE(int64_t{devices} * plan.requested_workers <= kMaxWorkerThreads, "net '",
                 net.name(), "' asks for ", plan.requested_workers, " worker(s) on each of ",
                 devices, " device(s), more than the dag executor's ", kMaxWorkerThreads,
                 " worker threads per net; lower num_workers");
  plan.workers = PoolWorkers(net, plan.is_cpu, plan.requested_workers, plan.cores);
  int concurrent = 0;
  for (int workers : plan.workers) concurrent += workers;
  plan.intra_op_threads = IntraOpThreadsForNet(net, std::max(1, concurrent));
  plan.runs_on_caller = plan.devices.size() <= 1 && (plan.workers.empty() || plan.workers[0] == 1);
  if (plan.runs_on_caller) std::fill(plan.workers.begin(), plan.workers.end(), 0);
  return plan;
}

std::string DagThreadPlan::ToString() const {
  std::string names;
  for (const std::string& device : devices) names += (names.empty() ? "" : ", ") + device;
  const int shown =
      workers.empty() ? 1 : std::max(1, *std::max_element(workers.begin(), workers.end()));
  std::string text = MakeString(devices.size(), " device pool", devices.size() == 1 ? "" : "s",
                                " (", names, ") x ", shown, " worker", shown == 1 ? "" : "s");
  if (runs_on_caller) text = MakeString("1 device (", names, ") run on the calling thread");
  if (shown < requested_workers) {
    text += MakeString(" (num_workers ", requested_workers, ", capped to ", cores, " core",
                       cores == 1 ? "" : "s", ")");
  }
  return text + MakeString(", ", intra_op_threads, " intra-op thread",
                           intra_op_threads == 1 ? "" : "s", " per op");
}

DagNet::DagNet(const NetDef& def, Workspace* workspace) : NetBase(def, workspace) {
  const int num_ops = def_.op_size();
  plan_ = PlanDagThreads(def_);
  operators_.reserve(num_ops);
  for (int i = 0; i < num_ops; ++i) operators_.push_back(CreateOpAt(i, workspace));

  const std::vector<std::vector<int>> parents = OpDependencies(def_);
  successors_.resize(num_ops);
  initial_pending_.resize(num_ops);
  for (int i = 0; i < num_ops; ++i) {
    initial_pending_[i] = static_cast<int>(parents[i].size());
    if (parents[i].empty()) roots_.push_back(i);
    for (int parent : parents[i]) successors_[parent].push_back(i);
  }
  pending_ = std::make_unique<std::atomic<int>[]>(num_ops);

  streams_ = MakeStreamScheduler(operators_, plan_.requested_workers);
  if (streams_) CheckOneStreamDevicePerPool();
  if (plan_.runs_on_caller) return;
  for (size_t d = 0; d < plan_.devices.size(); ++d) {
    pools_.push_back(std::make_unique<ThreadPool>(plan_.workers[d], plan_.devices[d]));
  }
}

void DagNet::CheckOneStreamDevicePerPool() const {
  // Stream w of a stream device must be driven by one thread, worker w of
  // one pool; ops that would break that cannot come from one context type,
  // but a mix of contexts could produce them.
  const StreamPlan& plan = streams_->plan();
  std::map<int, int> pool_of_stream_device;
  std::map<int, int> stream_device_of_pool;
  for (int i = 0; i < static_cast<int>(operators_.size()); ++i) {
    const int stream_device = plan.device_of_op[i];
    if (stream_device < 0) continue;
    const int pool = plan_.device_of_op[i];
    const auto by_device = pool_of_stream_device.emplace(stream_device, pool).first;
    const auto by_pool = stream_device_of_pool.emplace(pool, stream_device).first;
    const StreamDevice& device = plan.devices[stream_device];
    DOPPIO_ENFORCE(by_device->second == pool && by_pool->second == stream_device, "",
                   DescribeOp(i), " uses ", device.backend->name(), " device ", device.device,
                   ", which other ops of this net reach through another DeviceOption (or "
                   "their DeviceOption reaches another stream device); the dag executor "
                   "needs one DeviceOption per stream device");
  }
}

DagNet::~DagNet() {
  // Workers hold no task between runs, but join them before members go.
  pools_.clear();
}

const std::string& DagNet::device_label(int index) const {
  return plan_.devices.at(plan_.device_of_op.at(index));
}

void DagNet::Run() {
  if (operators_.empty()) return;
  if (plan_.runs_on_caller) {
    RunOnCaller();
    return;
  }
  for (size_t i = 0; i < operators_.size(); ++i) {
    pending_[i].store(initial_pending_[i], std::memory_order_relaxed);
  }
  stop_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(run_mutex_);
    finished_ = false;
    first_error_ = nullptr;
  }
  outstanding_.store(static_cast<int>(roots_.size()), std::memory_order_relaxed);
  if (streams_) streams_->BeginRun();
  // Submitting takes the pool's lock, which publishes the stores above.
  for (int root : roots_) Submit(root);

  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(run_mutex_);
    run_finished_.wait(lock, [this] { return finished_; });
    error = std::move(first_error_);
    first_error_ = nullptr;
  }
  // Every op has returned; their queued device work may still be running.
  if (streams_) streams_->FinishRun(/*report_failures=*/!error);
  if (error) std::rethrow_exception(error);
}

void DagNet::RunOnCaller() {
  ApplyIntraOpThreads(plan_.intra_op_threads);
  if (streams_) streams_->BeginRun();
  std::exception_ptr error;
  // As a worker would: its ops on stream 0, the first failure ends the run
  // after the device work already queued is drained.
  for (int op = 0; op < static_cast<int>(operators_.size()) && !error; ++op) {
    try {
      RunOpAt(op, *operators_[op], streams_.get(), /*stream_id=*/0);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (streams_) streams_->FinishRun(/*report_failures=*/!error);
  if (error) std::rethrow_exception(error);
}

void DagNet::RunChain(int op) {
  try {
    ApplyIntraOpThreads(plan_.intra_op_threads);
  } catch (...) {
    RecordError(std::current_exception());
  }
  // Ops run on the stream of their worker; the pool sets the index.
  const int stream_id = std::max(0, ThreadPool::CurrentWorkerIndex());
  while (op >= 0) {
    int next = -1;
    if (!stop_.load(std::memory_order_acquire)) {
      bool succeeded = false;
      try {
        RunOpAt(op, *operators_[op], streams_.get(), stream_id);
        succeeded = true;
      } catch (...) {
        RecordError(std::current_exception());
      }
      if (succeeded) ReleaseSuccessors(op, &next);
    }
    if (next < 0) FinishOne();
    // Otherwise `op`'s place among the outstanding ops passes to `next`.
    op = next;
  }
}

void DagNet::ReleaseSuccessors(int op, int* inline_next) {
  for (int successor : successors_[op]) {
    if (pending_[successor].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    if (*inline_next < 0 && plan_.device_of_op[successor] == plan_.device_of_op[op]) {
      *inline_next = successor;
    } else {
      Schedule(successor);
    }
  }
}

void DagNet::Schedule(int op) {
  // Counted before it is queued, so the run cannot look finished meanwhile.
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  Submit(op);
}

void DagNet::Submit(int op) {
  try {
    pools_[plan_.device_of_op[op]]->Submit([this, op] { RunChain(op); });
  } catch (...) {
    // Out of memory for the queue: the op will never run, so it fails the
    // run instead of leaving Run() waiting for it.
    RecordError(std::current_exception());
    FinishOne();
  }
}

void DagNet::RecordError(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (!first_error_) first_error_ = std::move(error);
  stop_.store(true, std::memory_order_release);
}

void DagNet::FinishOne() {
  if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard<std::mutex> lock(run_mutex_);
  finished_ = true;
  // Notified under the lock: once Run() sees finished_, it may return and
  // the net may be destroyed, so nothing here may touch it afterwards.
  run_finished_.notify_all();
}

namespace {
constexpr char kDag[] = "dag";
constexpr char kAsyncDag[] = "async_dag";
}  // namespace

bool IsDagNetType(const std::string& type) { return type == kDag || type == kAsyncDag; }

static NetRegisterer dag_net_registerer(kDag,
                                        [](const NetDef& def,
                                           Workspace* workspace) -> std::unique_ptr<NetBase> {
                                          return std::make_unique<DagNet>(def, workspace);
                                        });
static NetRegisterer async_dag_net_registerer(kAsyncDag,
                                              [](const NetDef& def,
                                                 Workspace* workspace) -> std::unique_ptr<NetBase> {
                                                return std::make_unique<DagNet>(def, workspace);
                                              });

}  // namespace doppio
