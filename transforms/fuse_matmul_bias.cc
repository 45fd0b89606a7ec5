#include "transforms/fuse_matmul_bias.h"

#include <string>
#include <vector>

#include "core/argument.h"
#include "core/workspace.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

// The float tensor of a blob the net never writes, of rank `rank`.
const Tensor* Constant(const Workspace& workspace, const BlobUses& uses, const std::string& name,
                       int rank) {
  if (!uses.Writers(name).empty()) return nullptr;
  const Blob* blob = workspace.GetBlob(name);
  if (blob == nullptr || !blob->IsTensor()) return nullptr;
  const Tensor& tensor = blob->GetTensor();
  if (tensor.dtype() != DataType::kFloat || !tensor.has_storage() || tensor.ndim() != rank) {
    return nullptr;
  }
  return &tensor;
}

bool IsPlainBroadcastMatMul(const NetDef& net, const OperatorDef& op) {
  return op.type() == "BatchMatMul" && op.input_size() == 2 && op.output_size() == 1 &&
         IntArg(op, "broadcast", 0) == 1 && IntArg(op, "trans_a", 0) == 0 &&
         IntArg(op, "trans_b", 0) == 0 && RunsOnCpu(net, op);
}

// The bias input of the Add reading `link`, or "" when the Add is not one
// this pass may absorb.
std::string BiasOfAdd(const NetDef& net, const OperatorDef& add, const std::string& link) {
  if (add.type() != "Add" || add.input_size() != 2 || add.output_size() != 1 ||
      !RunsOnCpu(net, add)) {
    return "";
  }
  if (HasLegacyBroadcastAxis(add)) return "";
  if (add.input(0) == link && add.input(1) != link) return add.input(1);
  if (add.input(1) == link && add.input(0) != link) return add.input(0);
  return "";
}

bool FuseOne(NetDef* net, const Workspace& workspace, const BlobUses& uses, int i) {
  const OperatorDef& matmul = net->op(i);
  if (!IsPlainBroadcastMatMul(*net, matmul)) return false;
  const Tensor* weight = Constant(workspace, uses, matmul.input(1), 2);
  if (weight == nullptr) return false;
  const std::string& link = matmul.output(0);
  const std::vector<int> readers = uses.ValueReaders(link, i);
  if (readers.size() != 1) return false;
  const int j = readers[0];
  const OperatorDef& add = net->op(j);
  const std::string bias_name = BiasOfAdd(*net, add, link);
  if (bias_name.empty() || !uses.IsPrivateLink(link, i, j)) return false;
  const Tensor* bias = Constant(workspace, uses, bias_name, 1);
  if (bias == nullptr || bias->dim(0) != weight->dim(1)) return false;
  if (uses.TouchedBetween(add.output(0), i, j)) return false;
  OperatorDef fc;
  fc.set_type("FCTransposed");
  fc.set_name(matmul.name());
  *fc.mutable_device_option() = matmul.device_option();
  fc.add_input(matmul.input(0));
  fc.add_input(matmul.input(1));
  fc.add_input(bias_name);
  fc.add_output(add.output(0));
  SetArgument(&fc, "axis", -1);
  *net->mutable_op(i) = fc;
  net->mutable_op()->DeleteSubrange(j, 1);
  return true;
}

}  // namespace

NetDef FuseMatMulBias(const NetDef& input_net, const Workspace& workspace, int* fused) {
  NetDef net = input_net;
  int count = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    const BlobUses uses(net);
    for (int i = 0; i < net.op_size() && !changed; ++i) changed = FuseOne(&net, workspace, uses, i);
    count += changed;
  }
  if (fused != nullptr) *fused = count;
  return net;
}

}  // namespace transforms
}  // namespace doppio
