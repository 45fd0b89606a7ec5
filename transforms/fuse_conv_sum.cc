#include "transforms/fuse_conv_sum.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/shape_walk.h"
#include "core/workspace.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

// One fusion: the Conv at `conv`, the Add at `add` reading its output as
// operand `operand`, and the Relu at `relu` (-1: none).
struct ConvSum {
  int conv = -1, add = -1, relu = -1, operand = 0;
};

bool SameShape(const std::map<std::string, TensorShape>& shapes, const std::string& a,
               const std::string& b) {
  const auto x = shapes.find(a), y = shapes.find(b);
  if (x == shapes.end() || y == shapes.end() || x->second.unknown_shape() ||
      y->second.unknown_shape()) {
    return false;
  }
  return x->second.dims_size() > 0 && x->second.data_type() == y->second.data_type() &&
         std::vector<int64_t>(x->second.dims().begin(), x->second.dims().end()) ==
             std::vector<int64_t>(y->second.dims().begin(), y->second.dims().end());
}

// The last writer of `blob` before op `before`, or -1.
int WriterBefore(const BlobUses& uses, const std::string& blob, int before) {
  int found = -1;
  for (int w : uses.Writers(blob)) {
    if (w < before) found = w;
  }
  return found;
}

// Whether Conv `conv` can move to `add` with its output summed there.
bool Fusable(const NetDef& net, const BlobUses& uses, int conv, int add) {
  if (conv < 0) return false;
  const OperatorDef& op = net.op(conv);
  if (op.type() != "Conv" || op.output_size() != 1 || op.input_size() > 3 || !RunsOnCpu(net, op) ||
      !op.engine().empty()) {
    return false;
  }
  if (!uses.IsPrivateLink(op.output(0), conv, add)) return false;
  for (const std::string& input : op.input()) {
    for (int w : uses.Writers(input)) {
      if (w > conv && w < add) return false;
    }
  }
  return true;
}

// The Relu that may join: the only reader of the sum, right after it.
int JoiningRelu(const NetDef& net, const BlobUses& uses, int add) {
  const std::string& sum = net.op(add).output(0);
  const std::vector<int> readers = uses.ValueReaders(sum, add);
  if (readers.size() != 1 || !uses.IsPrivateLink(sum, add, readers[0])) return -1;
  const OperatorDef& relu = net.op(readers[0]);
  if (relu.type() != "Relu" || relu.input_size() != 1 || relu.output_size() != 1 ||
      !RunsOnCpu(net, relu)) {
    return -1;
  }
  // Between the Add and the Relu nothing may read or write the Relu's output.
  if (uses.TouchedBetween(relu.output(0), add, readers[0])) return -1;
  return readers[0];
}

std::vector<ConvSum> PlanConvSums(const NetDef& net, const Workspace& workspace) {
  const BlobUses uses(net);
  const std::map<std::string, TensorShape> shapes = InferNetShapes(net, WorkspaceShapes(workspace));
  std::vector<ConvSum> plan;
  std::set<int> taken;
  for (int j = 0; j < net.op_size(); ++j) {
    const OperatorDef& add = net.op(j);
    if ((add.type() != "Add" && add.type() != "Sum") || add.input_size() != 2 ||
        add.output_size() != 1 || HasLegacyBroadcastAxis(add) || !RunsOnCpu(net, add) ||
        add.input(0) == add.input(1) || !SameShape(shapes, add.input(0), add.input(1))) {
      continue;
    }
    ConvSum best;
    for (int k = 0; k < 2; ++k) {
      const int conv = WriterBefore(uses, add.input(k), j);
      if (conv > best.conv && !taken.count(conv) && Fusable(net, uses, conv, j)) {
        best.conv = conv;
        best.operand = k;
      }
    }
    if (best.conv < 0) continue;
    best.add = j;
    best.relu = JoiningRelu(net, uses, j);
    if (taken.count(best.relu)) best.relu = -1;
    taken.insert({best.conv, best.add, best.relu});
    plan.push_back(best);
  }
  return plan;
}

OperatorDef Fused(const NetDef& net, const ConvSum& fusion) {
  const OperatorDef& conv = net.op(fusion.conv);
  const OperatorDef& add = net.op(fusion.add);
  OperatorDef fused = conv;
  fused.set_type("ConvFusion");
  fused.add_input(add.input(1 - fusion.operand));
  fused.set_output(0, fusion.relu >= 0 ? net.op(fusion.relu).output(0) : add.output(0));
  SetArgument(&fused, "fusion_type", fusion.relu >= 0 ? 3 : 2);
  return fused;
}

}  // namespace

NetDef FuseConvSum(const NetDef& net, const Workspace& workspace, int* fused) {
  const std::vector<ConvSum> plan = PlanConvSums(net, workspace);
  if (fused != nullptr) *fused = static_cast<int>(plan.size());
  if (plan.empty()) return net;
  std::map<int, const ConvSum*> at_add;
  std::set<int> dropped;
  for (const ConvSum& fusion : plan) {
    at_add[fusion.add] = &fusion;
    dropped.insert(fusion.conv);
    if (fusion.relu >= 0) dropped.insert(fusion.relu);
  }
  NetDef out = net;
  out.clear_op();
  for (int i = 0; i < net.op_size(); ++i) {
    if (dropped.count(i)) continue;
    const auto found = at_add.find(i);
    *out.add_op() = found == at_add.end() ? net.op(i) : Fused(net, *found->second);
  }
  return out;
}

}  // namespace transforms
}  // namespace doppio
