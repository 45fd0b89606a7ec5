#include "transforms/fuse_activation.h"

#include <vector>

#include "core/argument.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

// Caffe2's ConvFusion fusion_type FUSION_CONV_RELU; FC reads the same value.
constexpr int kFusionRelu = 1;

enum class Producer { kNone, kConv, kFC };

Producer FusableProducer(const NetDef& net, const OperatorDef& op) {
  if (op.output_size() != 1 || !RunsOnCpu(net, op)) return Producer::kNone;
  const std::string& type = op.type();
  if (type == "Conv" || type == "Conv1D" || type == "Conv2D" || type == "Conv3D") {
    if (op.input_size() < 2 || IntArg(op, "group", 1) != 1) return Producer::kNone;
    return Producer::kConv;
  }
  if (type == "FC" || type == "FCTransposed") {
    if (IntArg(op, "fusion_type", 0) != 0) return Producer::kNone;
    return Producer::kFC;
  }
  return Producer::kNone;
}

bool IsFusableRelu(const NetDef& net, const OperatorDef& op, const std::string& input) {
  return op.type() == "Relu" && op.input_size() == 1 && op.output_size() == 1 &&
         op.input(0) == input && RunsOnCpu(net, op);
}

}  // namespace

NetDef FuseActivation(const NetDef& input_net, ActivationFusions* fused) {
  NetDef net = input_net;
  ActivationFusions count;
  bool changed = true;
  while (changed) {
    changed = false;
    const BlobUses uses(net);
    for (int i = 0; i < net.op_size() && !changed; ++i) {
      const Producer producer = FusableProducer(net, net.op(i));
      if (producer == Producer::kNone) continue;
      const std::string& link = net.op(i).output(0);
      const std::vector<int> readers = uses.ValueReaders(link, i);
      if (readers.size() != 1) continue;
      const int j = readers[0];
      const OperatorDef& relu = net.op(j);
      if (!IsFusableRelu(net, relu, link) || !uses.IsPrivateLink(link, i, j)) continue;
      if (uses.TouchedBetween(relu.output(0), i, j)) continue;
      OperatorDef* op = net.mutable_op(i);
      op->set_output(0, relu.output(0));
      SetArgument(op, "fusion_type", kFusionRelu);
      if (producer == Producer::kConv) {
        op->set_type("ConvFusion");
        ++count.conv_relu;
      } else {
        ++count.fc_relu;
      }
      net.mutable_op()->DeleteSubrange(j, 1);
      changed = true;
    }
  }
  if (fused != nullptr) *fused = count;
  return net;
}

}  // namespace transforms
}  // namespace doppio
