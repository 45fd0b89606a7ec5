#include "transforms/registry.h"

#include <functional>
#include <map>

#include "core/enforce.h"
#include "transforms/fuse_activation.h"
#include "transforms/inplace_activation.h"

namespace doppio {
namespace transforms {

namespace {

using Transform = std::function<NetDef(const NetDef&)>;

const std::map<std::string, Transform>& Registry() {
  static const std::map<std::string, Transform> registry = {
      {"ConvToNNPack", ConvToNNPack},
      {"FuseActivation", [](const NetDef& net) { return FuseActivation(net, nullptr); }},
      {"InplaceActivation", [](const NetDef& net) { return InplaceActivation(net, nullptr); }},
  };
  return registry;
}

}  // namespace

NetDef ConvToNNPack(const NetDef& net) {
  NetDef out = net;
  for (OperatorDef& op : *out.mutable_op()) {
    const bool on_cpu = !op.has_device_option() || op.device_option().device_type() == 0;
    if (op.type() == "Conv" && on_cpu) op.set_engine("NNPACK");
  }
  return out;
}

std::vector<std::string> RegisteredTransforms() {
  std::vector<std::string> names;
  for (const auto& entry : Registry()) names.push_back(entry.first);
  return names;
}

NetDef ApplyRegisteredTransform(const std::string& name, const NetDef& net) {
  const auto it = Registry().find(name);
  if (it == Registry().end()) {
    std::string known;
    for (const std::string& registered : RegisteredTransforms()) {
      known += (known.empty() ? "" : ", ") + registered;
    }
    DOPPIO_THROW("no transform named '", name, "' is registered (known: ", known, ")");
  }
  return it->second(net);
}

}  // namespace transforms
}  // namespace doppio
