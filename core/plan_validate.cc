// ValidatePlan: the structural checks that let RunPlan fail before any net
// runs, with the step named, instead of halfway through a long plan.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/limits.h"
#include "core/plan.h"
#include "core/plan_internal.h"

namespace doppio {
namespace {

// Plans come from files, so their numbers are bounded where the runtime
// would otherwise overflow or exhaust memory: an interval must convert to
// nanoseconds in an int64 (100 years does), and each concurrent instance
// is a thread with its own workspace.
constexpr int64_t kMaxRunEveryMs = int64_t{100} * 365 * 24 * 3600 * 1000;
constexpr int kMaxConcurrentInstances = 1024;

// The field is marked deprecated in the proto; reading it to refuse it is
// the one use we have, so the deprecation warning is silenced only here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
std::string DeprecatedCriteriaNetwork(const ExecutionStep& step) {
  return step.criteria_network();
}
#pragma GCC diagnostic pop

void ValidateStep(const ExecutionStep& step, const std::string& path,
                  const std::set<std::string>& networks) {
  DOPPIO_ENFORCE(step.substep_size() == 0 || step.network_size() == 0, "execution step '",
                 path,
                 "' has both substeps and networks; a step runs either substeps or "
                 "networks, never both");
  DOPPIO_ENFORCE(DeprecatedCriteriaNetwork(step).empty(), "execution step '", path,
                 "' sets criteria_network '", DeprecatedCriteriaNetwork(step),
                 "', which Caffe2 deprecated and Doppio does not support; stop the step "
                 "with should_stop_blob instead");
  const std::vector<std::string> known(networks.begin(), networks.end());
  for (const std::string& name : step.network()) {
    DOPPIO_ENFORCE(networks.count(name), "execution step '", path, "' uses network '", name,
                   "', which the plan does not define (it defines ", known, ")");
  }
  if (step.has_num_iter()) {
    DOPPIO_ENFORCE(step.num_iter() >= 0, "execution step '", path, "' has num_iter ",
                   step.num_iter(), "; it must be >= 0");
    DOPPIO_ENFORCE(!step.has_should_stop_blob(), "execution step '", path,
                   "' sets both num_iter and should_stop_blob '", step.should_stop_blob(),
                   "'; a step is counted or stopped by a blob, not both");
  }
  DOPPIO_ENFORCE(!step.only_once() || step.has_should_stop_blob(), "execution step '", path,
                 "' sets only_once without should_stop_blob; only_once applies to "
                 "steps stopped by a blob");
  if (step.has_should_stop_blob()) {
    DOPPIO_ENFORCE(!step.should_stop_blob().empty(), "execution step '", path,
                   "' has an empty should_stop_blob name");
    // A loop with nothing in it could never see the blob change.
    DOPPIO_ENFORCE(step.substep_size() > 0 || step.network_size() > 0, "execution step '",
                   path, "' is stopped by should_stop_blob '", step.should_stop_blob(),
                   "' but has no networks or substeps that could set it");
  }
  if (step.has_report_net()) {
    DOPPIO_ENFORCE(networks.count(step.report_net()), "execution step '", path,
                   "' uses report_net '", step.report_net(),
                   "', which the plan does not define (it defines ", known, ")");
    DOPPIO_ENFORCE(step.has_report_interval(), "execution step '", path,
                   "' sets report_net '", step.report_net(),
                   "' without report_interval (in seconds)");
    DOPPIO_ENFORCE(step.report_interval() > 0, "execution step '", path,
                   "' has report_interval ", step.report_interval(),
                   "; it must be > 0 seconds");
  }
  if (step.has_run_every_ms()) {
    DOPPIO_ENFORCE(step.run_every_ms() > 0 && step.run_every_ms() <= kMaxRunEveryMs,
                   "execution step '", path, "' has run_every_ms ", step.run_every_ms(),
                   "; it must be > 0 and at most ", kMaxRunEveryMs, " (100 years)");
  }
  DOPPIO_ENFORCE(step.num_concurrent_instances() >= 0 &&
                     step.num_concurrent_instances() <= kMaxConcurrentInstances,
                 "execution step '", path, "' has num_concurrent_instances ",
                 step.num_concurrent_instances(), "; it must be in [0, ",
                 kMaxConcurrentInstances, "]");
  for (int i = 0; i < step.substep_size(); ++i) {
    ValidateStep(step.substep(i), plan_internal::ChildPath(path, step.substep(i), i),
                 networks);
  }
}

}  // namespace

void ValidatePlan(const PlanDef& plan) {
  std::set<std::string> networks;
  for (const NetDef& net : plan.network()) {
    DOPPIO_ENFORCE(networks.insert(net.name()).second, "plan '", plan.name(),
                   "' defines the network '", net.name(),
                   "' more than once; network names must be unique");
    // Nets are created lazily, maybe hours in; refuse an oversized one now.
    EnforceNetOpsLimit(net.op_size(), "network '" + net.name() + "' of plan '" +
                                          plan.name() + "'");
  }
  for (int i = 0; i < plan.execution_step_size(); ++i) {
    const ExecutionStep& step = plan.execution_step(i);
    ValidateStep(step, plan_internal::ChildPath("", step, i), networks);
  }
}

}  // namespace doppio
