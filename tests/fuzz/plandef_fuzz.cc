// Fuzz target: bytes -> PlanDef (binary or text) -> ValidatePlan, and each of
// its networks created in one workspace (as RunPlan would). Plans whose nets
// hold only allow-listed pure ops are also run, with a budget of step
// iterations so that num_iter = 2^62 ends quickly.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/net.h"
#include "core/plan.h"
#include "core/workspace.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/net_fuzz_util.h"

namespace {

constexpr int64_t kIterationBudget = 64;

bool AllNetsRunnable(const doppio::PlanDef& plan) {
  for (const doppio::NetDef& net : plan.network()) {
    if (!doppio::fuzz::AllOpsRunnable(net)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  PlanDef plan;
  if (!fuzz::ParseBinaryOrText(data, size, &plan)) return 0;
  try {
    ValidatePlan(plan);
  } catch (const Error&) {
    return 0;
  }
  {
    Workspace workspace;
    for (const NetDef& net : plan.network()) {
      fuzz::FeedExternalInputs(net, &workspace);
      try {
        workspace.CreateNet(net);
      } catch (const Error&) {
      }
    }
  }
  if (!AllNetsRunnable(plan)) return 0;
  Workspace workspace;
  for (const NetDef& net : plan.network()) fuzz::FeedExternalInputs(net, &workspace);
  std::atomic<int64_t> iterations{0};
  try {
    RunPlan(plan, &workspace,
            [&iterations](int64_t) { return iterations.fetch_add(1) < kIterationBudget; });
  } catch (const Error&) {
  }
  return 0;
}
