#include "core/plan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/enforce.h"
#include "core/net.h"
#include "core/plan_internal.h"
#include "core/workspace.h"

namespace doppio {
namespace {

using ShouldContinue = std::function<bool(int64_t iteration)>;

// Runs `fn`; whatever it throws leaves as a doppio::Error carrying `context`.
template <typename Fn>
void WithContext(const std::string& context, Fn&& fn) {
  try {
    fn();
  } catch (Error& error) {
    error.AppendContext(context);
    throw;
  } catch (const std::exception& error) {
    Error wrapped(error.what());
    wrapped.AppendContext(context);
    throw wrapped;
  }
}

// The exception being handled, as something RunPlan's caller can catch as a
// doppio::Error. Call only inside a catch block.
std::exception_ptr CaptureCurrentError() {
  try {
    throw;
  } catch (const Error&) {
    return std::current_exception();
  } catch (const std::exception& error) {
    return std::make_exception_ptr(Error(error.what()));
  } catch (...) {
    return std::make_exception_ptr(Error("a plan thread threw a non-standard exception"));
  }
}

// The plan's network definitions and the nets made from them, shared by every
// step of one RunPlan call. Steps compile from several threads when they run
// concurrently, hence the lock.
class PlanNets {
 public:
  struct Handle {
    NetBase* net = nullptr;
    // One Run() at a time per net: concurrent substeps and report steps may
    // name the same net in the same workspace.
    std::mutex* run_mutex = nullptr;
  };

  PlanNets(const PlanDef& plan, Workspace* root) : root_(root) {
    for (const NetDef& def : plan.network()) {
      // A net the workspace had before the plan ran is replaced once, so the
      // plan runs its own definition (as Caffe2 does).
      entries_[def.name()] = Entry{&def, root->GetNet(def.name()) != nullptr};
    }
  }

  // The net `name` in `workspace`, created on first use.
  Handle Get(const std::string& name, Workspace* workspace, const std::string& step_path) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto entry = entries_.find(name);
    DOPPIO_ENFORCE(entry != entries_.end(), "execution step '", step_path,
                   "' uses network '", name, "', which the plan does not define");
    NetBase* net = workspace->GetNet(name);
    const bool replace = workspace == root_ && entry->second.replace_existing;
    if (net == nullptr || replace) {
      WithContext(
          "while creating network '" + name + "' for execution step '" + step_path + "'",
          [&] { net = workspace->CreateNet(*entry->second.def, /*overwrite=*/true); });
      if (workspace == root_) entry->second.replace_existing = false;
    }
    std::unique_ptr<std::mutex>& run_mutex = run_mutexes_[{workspace, name}];
    if (!run_mutex) run_mutex = std::make_unique<std::mutex>();
    return Handle{net, run_mutex.get()};
  }

  // Drops the bookkeeping of a child workspace that is about to die.
  void ForgetWorkspace(const Workspace* workspace) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = run_mutexes_.lower_bound({workspace, std::string()});
    while (it != run_mutexes_.end() && it->first.first == workspace) {
      it = run_mutexes_.erase(it);
    }
  }

 private:
  struct Entry {
    const NetDef* def = nullptr;
    bool replace_existing = false;
  };
  Workspace* const root_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::map<std::pair<const Workspace*, std::string>, std::unique_ptr<std::mutex>>
      run_mutexes_;
};

// The first error among the threads working for one step; later ones are
// consequences and are dropped.
class FirstError {
 public:
  void Record(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_) first_ = std::move(error);
    failed_ = true;
  }
  bool failed() const { return failed_.load(); }
  void RethrowIfAny() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::exception_ptr first_;
};

// Runs jobs on their own threads every `interval` while a step's main loop
// runs, and each once more when it ends well. A failing job records its error
// (which stops the step) and runs no more.
class Reporter {
 public:
  explicit Reporter(FirstError* errors) : errors_(errors) {}
  ~Reporter() { Stop(/*final_run=*/false); }
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  void Start(std::chrono::milliseconds interval, std::function<void()> job) {
    threads_.emplace_back([this, interval, job = std::move(job)] { Loop(interval, job); });
  }

  // Ends the periodic runs and waits for the threads; with `final_run` each
  // job runs once more first, so a report always sees the finished state.
  void Stop(bool final_run) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!stopping_) final_run_ = final_run;
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

 private:
  void Loop(std::chrono::milliseconds interval, const std::function<void()>& job) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      const bool stopping = wake_.wait_for(lock, interval, [this] { return stopping_; });
      if (errors_->failed() || (stopping && !final_run_)) return;
      lock.unlock();
      try {
        job();
      } catch (...) {
        errors_->Record(CaptureCurrentError());
        return;
      }
      lock.lock();
      if (stopping) return;
    }
  }

  FirstError* const errors_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool final_run_ = false;
  std::vector<std::thread> threads_;
};

class StepRunner;

// One step bound to a workspace: its nets created, its substeps prepared.
// Built once for a step that shares its parent's workspace, or afresh for
// every execution of a step that gets a child workspace.
class CompiledStep {
 public:
  CompiledStep(const ExecutionStep& step, std::string path, Workspace* parent,
               bool child_workspace, ShouldContinue external, PlanNets* nets);
  ~CompiledStep();
  CompiledStep(const CompiledStep&) = delete;
  CompiledStep& operator=(const CompiledStep&) = delete;

  // Runs all iterations of the step; rethrows the first error of any thread.
  void Execute();

 private:
  bool ShouldRunIteration(int64_t iteration) const;
  // The should_stop_blob's value; false when the step has none or the blob
  // holds nothing yet.
  bool ShouldStop() const;
  void RunIterations();
  void RunSubstepsConcurrently();
  void RunNet(const PlanNets::Handle& handle, int64_t iteration);
  void StartReporters(Reporter* reporter);

  const ExecutionStep& step_;
  const std::string path_;
  PlanNets* const nets_;
  // Declared before the substeps and nets that point into it, so it dies
  // after them.
  std::unique_ptr<Workspace> own_workspace_;
  Workspace* workspace_;
  const ShouldContinue external_;
  const int instances_;
  FirstError errors_;
  std::vector<std::unique_ptr<StepRunner>> recurring_;
  std::vector<std::unique_ptr<StepRunner>> reports_;
  std::vector<PlanNets::Handle> networks_;
  PlanNets::Handle report_net_;
};

// A step as its parent sees it: compiled once, or per execution when it runs
// in a child workspace (create_workspace, or one instance among
// num_concurrent_instances).
class StepRunner {
 public:
  StepRunner(const ExecutionStep& step, std::string path, Workspace* workspace,
             ShouldContinue external, PlanNets* nets, bool per_instance)
      : step_(step),
        path_(std::move(path)),
        workspace_(workspace),
        external_(std::move(external)),
        nets_(nets) {
    if (!step.create_workspace() && !per_instance) {
      compiled_ =
          std::make_unique<CompiledStep>(step_, path_, workspace_,
                                         /*child_workspace=*/false, external_, nets_);
    }
  }

  const ExecutionStep& step() const { return step_; }

  // Safe to call from several threads only when each call compiles afresh.
  void Execute() {
    if (compiled_) {
      compiled_->Execute();
      return;
    }
    CompiledStep fresh(step_, path_, workspace_, /*child_workspace=*/true, external_,
                       nets_);
    fresh.Execute();
  }

 private:
  const ExecutionStep& step_;
  const std::string path_;
  Workspace* const workspace_;
  const ShouldContinue external_;
  PlanNets* const nets_;
  std::unique_ptr<CompiledStep> compiled_;
};

CompiledStep::CompiledStep(const ExecutionStep& step, std::string path, Workspace* parent,
                           bool child_workspace, ShouldContinue external, PlanNets* nets)
    : step_(step),
      path_(std::move(path)),
      nets_(nets),
      own_workspace_(child_workspace ? std::make_unique<Workspace>(parent) : nullptr),
      workspace_(child_workspace ? own_workspace_.get() : parent),
      external_(std::move(external)),
      instances_(std::max(1, step.num_concurrent_instances())) {
  // Substeps stop at their next iteration once anything in this step failed.
  const ShouldContinue substep_continue = [this](int64_t iteration) {
    return !errors_.failed() && external_(iteration);
  };
  for (int i = 0; i < step.substep_size(); ++i) {
    const ExecutionStep& substep = step.substep(i);
    const bool is_report = substep.has_run_every_ms();
    auto runner = std::make_unique<StepRunner>(
        substep, plan_internal::ChildPath(path_, substep, i), workspace_, substep_continue,
        nets_, /*per_instance=*/instances_ > 1 && !is_report);
    (is_report ? reports_ : recurring_).push_back(std::move(runner));
  }
  for (const std::string& name : step.network()) {
    networks_.push_back(nets_->Get(name, workspace_, path_));
  }
  if (step.has_report_net()) report_net_ = nets_->Get(step.report_net(), workspace_, path_);
  if (step.has_should_stop_blob()) {
    // As in Caffe2: a misspelt stop blob would otherwise loop forever.
    DOPPIO_ENFORCE(workspace_->HasBlob(step.should_stop_blob()), "should_stop_blob '",
                   step.should_stop_blob(), "' of execution step '", path_,
                   "' does not exist when the step starts; create it beforehand (e.g. "
                   "in an init net) or write it from one of the step's networks");
  }
}

CompiledStep::~CompiledStep() {
  recurring_.clear();
  reports_.clear();
  if (own_workspace_) nets_->ForgetWorkspace(own_workspace_.get());
}

bool CompiledStep::ShouldRunIteration(int64_t iteration) const {
  if (!external_(iteration)) return false;
  if (step_.has_should_stop_blob()) return !step_.only_once() || iteration == 0;
  const int64_t iterations = step_.has_num_iter() ? step_.num_iter() : 1;
  return iteration < iterations;
}

bool CompiledStep::ShouldStop() const {
  if (!step_.has_should_stop_blob()) return false;
  const std::string& name = step_.should_stop_blob();
  const Blob* blob = workspace_->GetBlob(name);
  DOPPIO_ENFORCE(blob != nullptr, "should_stop_blob '", name, "' of execution step '",
                 path_, "' was removed while the step ran");
  if (blob->IsEmpty()) return false;
  DOPPIO_ENFORCE(blob->IsTensor(), "should_stop_blob '", name, "' of execution step '",
                 path_, "' holds ", blob->TypeName(), "; it must be a bool scalar tensor");
  const Tensor& flag = blob->GetTensor();
  // Not written yet, like a blob that holds nothing.
  if (!flag.has_storage()) return false;
  DOPPIO_ENFORCE(flag.dtype() == DataType::kBool && flag.numel() == 1, "should_stop_blob '",
                 name, "' of execution step '", path_, "' holds a ",
                 DataTypeName(flag.dtype()), " tensor of shape ", flag.dims(),
                 "; it must be a bool scalar (one bool element)");
  DOPPIO_ENFORCE(flag.device().kind == DeviceKind::kCPU, "should_stop_blob '", name,
                 "' of execution step '", path_, "' must be on the CPU to be read");
  return flag.data<bool>()[0];
}

void CompiledStep::RunNet(const PlanNets::Handle& handle, int64_t iteration) {
  WithContext(MakeString("while running network '", handle.net->name(),
                         "' in execution step '", path_, "', iteration ", iteration),
              [&] {
                std::lock_guard<std::mutex> lock(*handle.run_mutex);
                handle.net->Run();
              });
}

void CompiledStep::StartReporters(Reporter* reporter) {
  if (report_net_.net != nullptr) {
    const PlanNets::Handle handle = report_net_;
    reporter->Start(
        std::chrono::seconds(step_.report_interval()),
        [this, handle, runs = int64_t{0}]() mutable { RunNet(handle, runs++); });
  }
  for (const auto& report : reports_) {
    StepRunner* runner = report.get();
    reporter->Start(std::chrono::milliseconds(runner->step().run_every_ms()),
                    [runner] { runner->Execute(); });
  }
}

void CompiledStep::Execute() {
  Reporter reporter(&errors_);
  StartReporters(&reporter);
  try {
    RunIterations();
  } catch (...) {
    reporter.Stop(/*final_run=*/false);
    throw;
  }
  reporter.Stop(/*final_run=*/!errors_.failed());
  errors_.RethrowIfAny();
}

void CompiledStep::RunIterations() {
  const bool concurrent =
      (step_.concurrent_substeps() && recurring_.size() > 1) || instances_ > 1;
  for (int64_t iteration = 0; !errors_.failed() && ShouldRunIteration(iteration);
       ++iteration) {
    if (step_.substep_size() > 0) {
      if (concurrent) {
        RunSubstepsConcurrently();
        if (errors_.failed()) return;
      } else {
        for (const auto& substep : recurring_) {
          substep->Execute();
          if (ShouldStop()) return;
        }
      }
    } else {
      for (const PlanNets::Handle& handle : networks_) {
        RunNet(handle, iteration);
        if (ShouldStop()) return;
      }
    }
    // Also covers loops whose only substeps are report steps.
    if (ShouldStop()) return;
  }
}

void CompiledStep::RunSubstepsConcurrently() {
  if (recurring_.empty()) return;
  const size_t count = recurring_.size() * static_cast<size_t>(instances_);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    StepRunner* substep = recurring_[i % recurring_.size()].get();
    try {
      threads.emplace_back([this, substep] {
        if (errors_.failed()) return;
        try {
          substep->Execute();
        } catch (...) {
          errors_.Record(CaptureCurrentError());
        }
      });
    } catch (...) {
      // Out of threads: the ones started still have to be joined below.
      Error error(MakeString("execution step '", path_, "' could not start thread ", i + 1,
                             " of ", count, " for its concurrent substeps"));
      errors_.Record(std::make_exception_ptr(error));
      break;
    }
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace

void RunPlan(const PlanDef& plan, Workspace* workspace,
             const PlanShouldContinue& should_continue) {
  DOPPIO_ENFORCE(workspace != nullptr, "RunPlan needs a workspace");
  WithContext("while running plan '" + plan.name() + "'", [&] {
    ValidatePlan(plan);
    PlanNets nets(plan, workspace);
    ShouldContinue external = should_continue;
    if (!external) external = [](int64_t) { return true; };
    // Step by step, so a later step's nets see what earlier steps created.
    for (int i = 0; i < plan.execution_step_size(); ++i) {
      const ExecutionStep& step = plan.execution_step(i);
      StepRunner runner(step, plan_internal::ChildPath("", step, i), workspace, external,
                        &nets, /*per_instance=*/false);
      runner.Execute();
    }
  });
}

}  // namespace doppio
