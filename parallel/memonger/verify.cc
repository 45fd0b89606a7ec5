// Post-rewrite safety checks (Caffe2's verify_graph_equality and
// verify_inplace_blobs).
#include <unordered_map>
#include <utility>
#include <vector>

#include "parallel/memonger/memonger.h"

namespace doppio {
namespace memonger {
namespace {

// For every op, the index of the op that last wrote each of its inputs and
// control inputs (-1: written before the net), position by position.
std::vector<std::vector<int>> Producers(const NetDef& net) {
  std::vector<std::vector<int>> producers(net.op_size());
  std::unordered_map<std::string, int> last_writer;
  auto producer_of = [&](const std::string& name) {
    auto it = last_writer.find(name);
    return it == last_writer.end() ? -1 : it->second;
  };
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    for (const std::string& name : op.input()) producers[i].push_back(producer_of(name));
    for (const std::string& name : op.control_input()) producers[i].push_back(producer_of(name));
    for (const std::string& name : op.output()) last_writer[name] = i;
  }
  return producers;
}

std::vector<std::pair<int, int>> InplacePairs(const OperatorDef& op) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < op.input_size(); ++i) {
    for (int o = 0; o < op.output_size(); ++o) {
      if (op.input(i) == op.output(o)) pairs.emplace_back(i, o);
    }
  }
  return pairs;
}

}  // namespace

bool VerifyGraphEquality(const NetDef& net_a, const NetDef& net_b) {
  if (net_a.op_size() != net_b.op_size()) return false;
  for (int i = 0; i < net_a.op_size(); ++i) {
    const OperatorDef& a = net_a.op(i);
    const OperatorDef& b = net_b.op(i);
    if (a.type() != b.type() || a.engine() != b.engine() ||
        a.device_option().SerializeAsString() != b.device_option().SerializeAsString() ||
        a.input_size() != b.input_size() || a.output_size() != b.output_size()) {
      return false;
    }
  }
  return Producers(net_a) == Producers(net_b);
}

bool VerifyInplaceBlobs(const NetDef& net_a, const NetDef& net_b) {
  if (net_a.op_size() != net_b.op_size()) return false;
  for (int i = 0; i < net_a.op_size(); ++i) {
    if (net_a.op(i).type() != net_b.op(i).type()) return false;
    if (InplacePairs(net_a.op(i)) != InplacePairs(net_b.op(i))) return false;
  }
  return true;
}

}  // namespace memonger
}  // namespace doppio
