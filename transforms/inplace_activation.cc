#include "transforms/inplace_activation.h"

#include <set>
#include <string>
#include <vector>

#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

bool IsElementwiseActivation(const OperatorDef& op) {
  static const std::set<std::string> kTypes = {"Relu", "LeakyRelu", "Sigmoid",
                                               "Tanh", "Elu",       "Softplus"};
  return kTypes.count(op.type()) && op.input_size() == 1 && op.output_size() == 1 &&
         op.input(0) != op.output(0);
}

bool CanReuseInput(const BlobUses& uses, int index, const std::string& x,
                   const std::string& y) {
  const std::vector<int>& x_writers = uses.Writers(x);
  if (x_writers.empty() || x_writers.back() >= index) return false;
  if (uses.Readers(x).back() != index) return false;
  if (uses.IsExternalInput(x) || uses.IsExternalOutput(x)) return false;
  if (uses.Writers(y) != std::vector<int>{index}) return false;
  if (uses.IsExternalInput(y) || uses.IsExternalOutput(y)) return false;
  for (int reader : uses.Readers(y)) {
    if (reader <= index) return false;
  }
  return true;
}

}  // namespace

NetDef InplaceActivation(const NetDef& input_net, int* rewritten) {
  NetDef net = input_net;
  int count = 0;
  // Renames chain forward: after Relu(a) -> b became a -> a, a later
  // Sigmoid(b) -> c reads a, and its own test must see the renamed net.
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    if (!IsElementwiseActivation(op)) continue;
    const BlobUses current(net);
    const std::string x = op.input(0), y = op.output(0);
    if (!CanReuseInput(current, i, x, y)) continue;
    net.mutable_op(i)->set_output(0, x);
    for (int k = i + 1; k < net.op_size(); ++k) {
      OperatorDef* later = net.mutable_op(k);
      for (int in = 0; in < later->input_size(); ++in) {
        if (later->input(in) == y) later->set_input(in, x);
      }
    }
    ++count;
  }
  if (rewritten != nullptr) *rewritten = count;
  return net;
}

}  // namespace transforms
}  // namespace doppio
