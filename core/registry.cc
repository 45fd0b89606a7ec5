#include "core/registry.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "core/engine_pref.h"
#include "core/low_precision_op.h"
#include "core/schema.h"

namespace doppio {
namespace {

using KeyTuple = std::tuple<std::string, int, std::string>;

std::map<KeyTuple, OperatorCreator>& Creators() {
  static auto* creators = new std::map<KeyTuple, OperatorCreator>();
  return *creators;
}

std::map<int, FallbackCreator>& Fallbacks() {
  static auto* fallbacks = new std::map<int, FallbackCreator>();
  return *fallbacks;
}

KeyTuple AsTuple(const OperatorKey& key) {
  return KeyTuple(key.type, static_cast<int>(key.device), key.engine);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] != b[j - 1]);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

const char* DeviceName(DeviceKind kind) {
  return kind == DeviceKind::kCUDA ? "CUDA" : "CPU";
}

std::vector<std::string> SplitEngines(const std::string& engines) {
  std::vector<std::string> result;
  size_t start = 0;
  while (start <= engines.size()) {
    size_t comma = engines.find(',', start);
    if (comma == std::string::npos) comma = engines.size();
    std::string engine = engines.substr(start, comma - start);
    if (!engine.empty() && engine != "DEFAULT") result.push_back(engine);
    start = comma + 1;
  }
  return result;
}

// The creator registered for `def`'s type on `kind`: the def's engines in
// order, then the preferred ones (core/engine_pref.h), then the default
// engine; nullptr when there is none.
const OperatorCreator* FindCreator(const OperatorDef& def, DeviceKind kind) {
  std::vector<std::string> engines = SplitEngines(def.engine());
  const std::vector<std::string> preferred = PreferredEngines(def.type(), kind);
  engines.insert(engines.end(), preferred.begin(), preferred.end());
  for (const std::string& engine : engines) {
    if (const OperatorCreator* creator = OperatorRegistry::Find({def.type(), kind, engine})) {
      return creator;
    }
  }
  return OperatorRegistry::Find({def.type(), kind, ""});
}

// Every op is checked against its schema before it is built.
const OpSchema& VerifiedSchema(const OperatorDef& def) {
  const OpSchema* schema = OpSchemaRegistry::Schema(def.type());
  DOPPIO_ENFORCE(schema != nullptr, "operator type '", def.type(),
                 "' is registered without a schema; every op needs an OPERATOR_SCHEMA");
  schema->Verify(def);
  return *schema;
}

// A CPU kernel whose schema computes float16/bfloat16 in float32 is built
// inside a LowPrecisionOp (core/low_precision_op.h).
OperatorCreator CpuCreator(const OpSchema& schema, const OperatorCreator& kernel) {
  if (!schema.low_precision_in_float32()) return kernel;
  std::set<int> float32_outputs = schema.float32_outputs();
  return [kernel, float32_outputs](const OperatorDef& def, Workspace* workspace) {
    return std::unique_ptr<OperatorBase>(
        new LowPrecisionOp(def, workspace, kernel, float32_outputs));
  };
}

}  // namespace

void OperatorRegistry::Register(const OperatorKey& key, OperatorCreator creator) {
  auto inserted = Creators().emplace(AsTuple(key), std::move(creator));
  if (!inserted.second) {
    // Two kernels for one key is a build defect, found at start-up.
    std::fprintf(stderr, "doppio: operator %s (%s, engine '%s') registered twice\n",
                 key.type.c_str(), DeviceName(key.device), key.engine.c_str());
    std::abort();
  }
}

const OperatorCreator* OperatorRegistry::Find(const OperatorKey& key) {
  const auto& creators = Creators();
  auto it = creators.find(AsTuple(key));
  return it == creators.end() ? nullptr : &it->second;
}

void OperatorRegistry::RegisterFallback(DeviceKind device, FallbackCreator creator) {
  const bool inserted = Fallbacks().emplace(static_cast<int>(device), std::move(creator)).second;
  DOPPIO_ENFORCE(inserted, "a fallback is already registered for ", DeviceName(device));
}

const FallbackCreator* OperatorRegistry::FindFallback(DeviceKind device) {
  const auto& fallbacks = Fallbacks();
  auto it = fallbacks.find(static_cast<int>(device));
  return it == fallbacks.end() ? nullptr : &it->second;
}

std::vector<OperatorKey> OperatorRegistry::Keys() {
  std::vector<OperatorKey> keys;
  for (const auto& entry : Creators()) {
    keys.push_back({std::get<0>(entry.first),
                    static_cast<DeviceKind>(std::get<1>(entry.first)),
                    std::get<2>(entry.first)});
  }
  return keys;
}

std::vector<std::string> OperatorRegistry::SimilarTypes(const std::string& type) {
  const std::string wanted = Lower(type);
  const size_t limit = std::max<size_t>(2, type.size() / 3);
  // (score, edit distance, name): among equal scores the closer spelling
  // comes first, so a short prefix ("Do") does not hide a near miss.
  std::vector<std::tuple<size_t, size_t, std::string>> scored;
  std::string last;
  for (const auto& entry : Creators()) {
    const std::string& candidate = std::get<0>(entry.first);
    if (candidate == last) continue;
    last = candidate;
    const std::string lowered = Lower(candidate);
    const size_t distance = EditDistance(wanted, lowered);
    size_t score = distance;
    // A differently-cased name or a prefix ("Conv" for "ConvTranspos") is a
    // likely intent even when many letters differ.
    if (lowered.rfind(wanted, 0) == 0 || wanted.rfind(lowered, 0) == 0) {
      score = std::min<size_t>(score, 1);
    }
    if (score <= limit) scored.emplace_back(score, distance, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < scored.size() && i < 5; ++i) names.push_back(std::get<2>(scored[i]));
  return names;
}

std::unique_ptr<OperatorBase> CreateOperator(const OperatorDef& def,
                                             Workspace* workspace) {
  const Device device = DeviceFromOption(def.device_option());
  const OperatorCreator* creator = FindCreator(def, device.kind);
  if (!creator && device.kind != DeviceKind::kCPU) {
    const OperatorCreator* cpu = FindCreator(def, DeviceKind::kCPU);
    const FallbackCreator* fallback = OperatorRegistry::FindFallback(device.kind);
    if (cpu != nullptr && fallback != nullptr) {
      return (*fallback)(def, workspace, CpuCreator(VerifiedSchema(def), *cpu));
    }
  }
  if (!creator) {
    bool on_other_device = false;
    for (const OperatorKey& key : OperatorRegistry::Keys()) {
      if (key.type == def.type()) on_other_device = true;
    }
    if (on_other_device) {
      DOPPIO_THROW("operator type '", def.type(), "' has no ", DeviceName(device.kind),
                   " implementation in this build");
    }
    const auto similar = OperatorRegistry::SimilarTypes(def.type());
    if (similar.empty()) {
      DOPPIO_THROW("unknown operator type '", def.type(), "'");
    }
    DOPPIO_THROW("unknown operator type '", def.type(), "'; did you mean ", similar, "?");
  }
  const OpSchema& schema = VerifiedSchema(def);
  if (device.kind == DeviceKind::kCPU) return CpuCreator(schema, *creator)(def, workspace);
  return (*creator)(def, workspace);
}

}  // namespace doppio
