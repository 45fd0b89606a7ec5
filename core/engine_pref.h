// Caffe2's engine preferences (core.SetEnginePref and friends): the engines
// CreateOperator tries for an op after the ones its def names, before the
// default engine -- first those preferred for the op's type on its device,
// then those preferred for every op on the device. A preferred engine with
// no kernel for the op is skipped, as in Caffe2.
//
// Process-wide. Setting replaces the previous preferences of that kind;
// setting and reading are thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/allocator.h"

namespace doppio {

// device -> op type -> engines, and device -> engines.
using PerOpEnginePref = std::map<DeviceKind, std::map<std::string, std::vector<std::string>>>;
using GlobalEnginePref = std::map<DeviceKind, std::vector<std::string>>;

// Throws, changing nothing, when an op type has no kernel on the device it
// is given for.
void SetPerOpEnginePref(const PerOpEnginePref& preferences);
void SetGlobalEnginePref(const GlobalEnginePref& preferences);
void SetEnginePref(const PerOpEnginePref& per_op, const GlobalEnginePref& global);
// Replaces the per-op preferences of `op_type` on the devices given.
void SetOpEnginePref(const std::string& op_type,
                     const std::map<DeviceKind, std::vector<std::string>>& preferences);

// The preferred engines for `op_type` on `device`, per-op ones first.
std::vector<std::string> PreferredEngines(const std::string& op_type, DeviceKind device);

}  // namespace doppio
