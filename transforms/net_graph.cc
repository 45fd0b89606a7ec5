#include "transforms/net_graph.h"

#include <algorithm>

#include "core/argument.h"
#include "core/workspace.h"

namespace doppio {
namespace transforms {

namespace {
const std::vector<int> kNoOps;
}  // namespace

BlobUses::BlobUses(const NetDef& net) {
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    for (const std::string& blob : op.input()) {
      std::vector<int>& readers = readers_[blob];
      // An op reading one blob twice (Mul(x, x)) is one reader.
      if (readers.empty() || readers.back() != i) readers.push_back(i);
    }
    for (const std::string& blob : op.output()) {
      std::vector<int>& writers = writers_[blob];
      if (writers.empty() || writers.back() != i) writers.push_back(i);
    }
  }
  external_inputs_.insert(net.external_input().begin(), net.external_input().end());
  external_outputs_.insert(net.external_output().begin(), net.external_output().end());
}

const std::vector<int>& BlobUses::Readers(const std::string& blob) const {
  const auto it = readers_.find(blob);
  return it == readers_.end() ? kNoOps : it->second;
}

const std::vector<int>& BlobUses::Writers(const std::string& blob) const {
  const auto it = writers_.find(blob);
  return it == writers_.end() ? kNoOps : it->second;
}

bool BlobUses::TouchedBetween(const std::string& blob, int first, int last) const {
  for (const std::vector<int>* ops : {&Readers(blob), &Writers(blob)}) {
    for (int op : *ops) {
      if (op > first && op < last) return true;
    }
  }
  return false;
}

namespace {
constexpr int kNever = 1 << 30;
}  // namespace

int BlobUses::NextWriter(const std::string& blob, int writer) const {
  for (int op : Writers(blob)) {
    if (op > writer) return op;
  }
  return kNever;
}

std::vector<int> BlobUses::ValueReaders(const std::string& blob, int writer) const {
  const int next = NextWriter(blob, writer);
  std::vector<int> readers;
  for (int op : Readers(blob)) {
    if (op > writer && op <= next) readers.push_back(op);
  }
  return readers;
}

bool BlobUses::IsPrivateLink(const std::string& blob, int writer, int reader) const {
  if (IsExternalInput(blob) || ValueReaders(blob, writer) != std::vector<int>{reader}) {
    return false;
  }
  // Overwritten later (by the reader in place, Relu(a) -> a, or by another
  // op): nobody sees the value after the reader. Otherwise it lives on to
  // the end of the net, where an external output would hand it out.
  return NextWriter(blob, writer) != kNever || !IsExternalOutput(blob);
}

bool RunsOnCpu(const NetDef& net, const OperatorDef& op) {
  const DeviceOption& device =
      op.has_device_option() ? op.device_option() : net.device_option();
  return device.device_type() == 0;  // PROTO_CPU, also when unset
}

bool HasArg(const OperatorDef& op, const std::string& name) { return ArgumentHelper(op).Has(name); }

bool HasLegacyBroadcastAxis(const OperatorDef& op) {
  return HasArg(op, "axis") || HasArg(op, "axis_str");
}

int IntArg(const OperatorDef& op, const std::string& name, int default_value) {
  return ArgumentHelper(op).GetSingle<int>(name, default_value);
}

float FloatArg(const OperatorDef& op, const std::string& name, float default_value) {
  return ArgumentHelper(op).GetSingle<float>(name, default_value);
}

std::string StringArg(const OperatorDef& op, const std::string& name,
                      const std::string& default_value) {
  return ArgumentHelper(op).GetSingle<std::string>(name, default_value);
}

std::vector<std::string> SinkBlobs(const NetDef& net) {
  std::set<std::string> read_later, seen;
  std::vector<std::string> sinks;
  for (int i = net.op_size() - 1; i >= 0; --i) {
    const OperatorDef& op = net.op(i);
    for (const std::string& blob : op.output()) {
      if (!read_later.count(blob) && seen.insert(blob).second) sinks.push_back(blob);
    }
    for (const std::string& blob : op.input()) read_later.insert(blob);
  }
  std::reverse(sinks.begin(), sinks.end());
  return sinks;
}

std::string UniqueBlobName(const std::string& base, const NetDef& net,
                           const Workspace* workspace) {
  std::set<std::string> taken(net.external_input().begin(), net.external_input().end());
  taken.insert(net.external_output().begin(), net.external_output().end());
  for (const OperatorDef& op : net.op()) {
    taken.insert(op.input().begin(), op.input().end());
    taken.insert(op.output().begin(), op.output().end());
  }
  const auto free = [&](const std::string& name) {
    return !taken.count(name) && (workspace == nullptr || !workspace->HasBlob(name));
  };
  if (free(base)) return base;
  for (int suffix = 1;; ++suffix) {
    const std::string name = base + "_" + std::to_string(suffix);
    if (free(name)) return name;
  }
}

}  // namespace transforms
}  // namespace doppio
