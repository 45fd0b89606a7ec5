// print_registered_ops: lists every registered operator type with its
// devices, engines, schema summary and gradient status. Exits 1 when an
// operator is registered without a schema (such an op cannot run), so a
// build can check its registry with one command.

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "tools/cli_util.h"

namespace doppio {
namespace {

constexpr const char* kTool = "print_registered_ops";

constexpr const char* kUsage =
    "lists every registered operator: devices, engines, schema summary and\n"
    "gradient (maker, no gradient (reason), should not do gradient (reason)\n"
    "or MISSING). Exit status 1 if an operator has no schema.\n"
    "\n"
    "  print_registered_ops";

struct OpInfo {
  std::set<std::string> devices;
  std::set<std::string> engines;
};

std::string Join(const std::set<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) {
    if (!joined.empty()) joined += ", ";
    joined += item;
  }
  return joined;
}

std::string DescribeGradient(const std::string& type) {
  const GradientRegistry::Entry* entry = GradientRegistry::Find(type);
  if (entry == nullptr) return "MISSING";
  switch (entry->kind) {
    case GradientRegistry::Kind::kMaker:
      return "maker";
    case GradientRegistry::Kind::kNoGradient:
      return "no gradient (" + entry->reason + ")";
    case GradientRegistry::Kind::kShouldNotDoGradient:
      return "should not do gradient (" + entry->reason + ")";
  }
  return "unknown";
}

int PrintRegisteredOps() {
  std::map<std::string, OpInfo> ops;
  for (const OperatorKey& key : OperatorRegistry::Keys()) {
    OpInfo& info = ops[key.type];
    info.devices.insert(key.device == DeviceKind::kCUDA ? "CUDA" : "CPU");
    info.engines.insert(key.engine.empty() ? "DEFAULT" : key.engine);
  }

  std::vector<std::string> without_schema;
  std::printf("%zu registered operator type(s)\n", ops.size());
  for (const auto& entry : ops) {
    const std::string& type = entry.first;
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    std::printf("\n%s\n", type.c_str());
    std::printf("  devices:  %s\n", Join(entry.second.devices).c_str());
    std::printf("  engines:  %s\n", Join(entry.second.engines).c_str());
    if (schema != nullptr) {
      std::printf("  schema:   %s (%s:%d)\n", schema->Summary().c_str(),
                  schema->file().c_str(), schema->line());
    } else {
      std::printf("  schema:   MISSING\n");
      without_schema.push_back(type);
    }
    std::printf("  gradient: %s\n", DescribeGradient(type).c_str());
  }

  // Schemas of types with no kernel are not errors (a gradient op may be
  // documented before its kernel lands) but are worth seeing.
  std::vector<std::string> schema_only;
  for (const auto& entry : OpSchemaRegistry::All()) {
    if (!ops.count(entry.first)) schema_only.push_back(entry.first);
  }
  if (!schema_only.empty()) {
    std::printf("\n%zu schema(s) without a registered kernel:\n", schema_only.size());
    for (const std::string& type : schema_only) std::printf("  %s\n", type.c_str());
  }
  std::fflush(stdout);

  if (!without_schema.empty()) {
    std::string names;
    for (const std::string& type : without_schema) {
      names += names.empty() ? type : ", " + type;
    }
    cli::ReportError(kTool, std::to_string(without_schema.size()) +
                                " operator type(s) registered without a schema: " + names);
    return cli::kExitFailure;
  }
  return 0;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  using namespace doppio;
  return cli::RunFlagsOnlyTool(kTool, kUsage,
                               "tools/print_registered_ops", argc, argv,
                               PrintRegisteredOps);
}
