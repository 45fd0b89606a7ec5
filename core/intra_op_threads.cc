#include "core/intra_op_threads.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"

namespace doppio {
namespace {

struct Setter {
  std::string name;
  IntraOpSetterScope scope;
  IntraOpThreadSetter apply;
};

struct SetterRegistry {
  std::mutex mutex;
  std::vector<Setter> setters;
  // Bumped by every registration so values cached before it are re-applied
  // through the new setter too.
  std::atomic<uint32_t> generation{1};
  // (generation << 32 | threads) last applied process-wide; 0 = never.
  std::atomic<uint64_t> process_applied{0};
};

SetterRegistry& Registry() {
  static auto* registry = new SetterRegistry();
  return *registry;
}

// Like process_applied, for the per-thread setters on this thread.
thread_local uint64_t thread_applied = 0;

uint64_t AppliedKey(uint32_t generation, int num_threads) {
  return static_cast<uint64_t>(generation) << 32 | static_cast<uint32_t>(num_threads);
}

}  // namespace

void RegisterIntraOpThreadSetter(const std::string& name, IntraOpSetterScope scope,
                                 IntraOpThreadSetter setter) {
  SetterRegistry& registry = Registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.setters.push_back({name, scope, std::move(setter)});
  registry.generation.fetch_add(1);
}

void ApplyIntraOpThreads(int num_threads) {
  DOPPIO_ENFORCE(num_threads >= 1 && num_threads <= kMaxIntraOpThreads,
                 "intra-op threads must be in [1, ", kMaxIntraOpThreads, "], got ", num_threads);
  SetterRegistry& registry = Registry();
  const uint64_t key = AppliedKey(registry.generation.load(), num_threads);
  const bool thread_current = thread_applied == key;
  if (thread_current && registry.process_applied.load() == key) return;
  std::lock_guard<std::mutex> lock(registry.mutex);
  // Re-read under the lock: a registration may have happened meanwhile.
  const uint64_t locked_key = AppliedKey(registry.generation.load(), num_threads);
  const bool apply_process = registry.process_applied.load() != locked_key;
  const bool apply_thread = thread_applied != locked_key;
  for (const Setter& setter : registry.setters) {
    const bool per_thread = setter.scope == IntraOpSetterScope::kPerThread;
    if (per_thread ? !apply_thread : !apply_process) continue;
    try {
      setter.apply(num_threads);
    } catch (Error& error) {
      error.AppendContext("while setting " + setter.name + " to " +
                          std::to_string(num_threads) + " intra-op thread(s)");
      throw;
    }
  }
  registry.process_applied.store(locked_key);
  thread_applied = locked_key;
}

namespace {

int CoresByAffinity() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) {
    const int count = CPU_COUNT(&cpus);
    if (count > 0) return count;
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

// DOPPIO_NUM_CORES as a positive count, or 0 when unset or not one.
int CoresFromEnvironment() {
  const char* value = std::getenv("DOPPIO_NUM_CORES");
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  const long count = std::strtol(value, &end, 10);
  return *end == '\0' && count > 0 && count <= kMaxIntraOpThreads ? static_cast<int>(count) : 0;
}

}  // namespace

int AvailableCores() {
  const int by_affinity = CoresByAffinity();
  const int asked = CoresFromEnvironment();
  return asked > 0 ? std::min(asked, by_affinity) : by_affinity;
}

int IntraOpThreadsForNet(const NetDef& net, int concurrent_workers) {
  ArgumentHelper args(net);
  if (args.Has("intra_op_threads")) {
    // Read as int64 so that 2^40 is reported as it was written, not as an
    // int conversion error.
    int64_t threads = 0;
    try {
      threads = args.GetSingle<int64_t>("intra_op_threads", 0);
    } catch (Error& error) {
      error.AppendContext("in the arguments of net '" + net.name() + "'");
      throw;
    }
    DOPPIO_ENFORCE(threads >= 0 && threads <= kMaxIntraOpThreads, "net '", net.name(),
                   "': argument intra_op_threads must be in [1, ", kMaxIntraOpThreads,
                   "] (or 0 for the default, the cores divided among the workers), got ",
                   threads);
    if (threads > 0) return static_cast<int>(threads);
  }
  const int cores = AvailableCores();
  return std::max(1, cores / std::max(1, concurrent_workers));
}

}  // namespace doppio
