// Helpers shared by core/plan.cc and core/plan_validate.cc; not an API.
#pragma once

#include <string>

#include "core/enforce.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace plan_internal {

// How errors name a step: its path of names from the plan's top level
// ("train/iter"), an unnamed step by its index among its siblings ("#1").
inline std::string ChildPath(const std::string& parent, const ExecutionStep& step,
                             int index) {
  const std::string label = step.name().empty() ? MakeString("#", index) : step.name();
  return parent.empty() ? label : parent + "/" + label;
}

}  // namespace plan_internal
}  // namespace doppio
