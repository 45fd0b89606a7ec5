#include "transforms/fuse_activation.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/argument.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

// Caffe2's ConvFusion fusion_type FUSION_CONV_RELU; FC reads the same value.
constexpr int kFusionRelu = 1;

enum class Producer { kNone, kConv, kFC };

// The activations ConvFusion applies as a oneDNN post-op (the kernel's
// ReadFusedActivation reads the same list), with the arguments it carries
// over, prefixed "activation_".
const std::map<std::string, std::vector<std::string>>& ConvActivations() {
  static const std::map<std::string, std::vector<std::string>> kFusable = {
      {"Relu", {}},
      {"LeakyRelu", {"alpha"}},
      {"Clip", {"min", "max"}},
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"Elu", {"alpha"}},
      {"Swish", {}},
      {"HardSwish", {}},
  };
  return kFusable;
}

const std::vector<std::string>& ConvActivationArgs(const std::string& type) {
  return ConvActivations().at(type);
}

bool IsConvActivation(const std::string& type) { return ConvActivations().count(type) > 0; }

Producer FusableProducer(const NetDef& net, const OperatorDef& op) {
  if (op.output_size() != 1 || !RunsOnCpu(net, op)) return Producer::kNone;
  const std::string& type = op.type();
  if (type == "Conv" || type == "Conv1D" || type == "Conv2D" || type == "Conv3D") {
    // Any group count: oneDNN's grouped and depthwise kernels take post-ops
    // as its plain ones do (Caffe2 fused one group only, for ideep).
    if (op.input_size() < 2) return Producer::kNone;
    return Producer::kConv;
  }
  if (type == "FC" || type == "FCTransposed") {
    if (IntArg(op, "fusion_type", 0) != 0) return Producer::kNone;
    return Producer::kFC;
  }
  return Producer::kNone;
}

bool IsFusableActivation(const NetDef& net, Producer producer, const OperatorDef& op,
                         const std::string& input) {
  const bool known =
      producer == Producer::kConv ? IsConvActivation(op.type()) : op.type() == "Relu";
  return known && op.input_size() == 1 && op.output_size() == 1 && op.input(0) == input &&
         RunsOnCpu(net, op);
}

// The producer takes over the activation's output and applies it.
void AbsorbActivation(Producer producer, const OperatorDef& activation, OperatorDef* op,
                      ActivationFusions* count) {
  op->set_output(0, activation.output(0));
  SetArgument(op, "fusion_type", kFusionRelu);
  if (producer == Producer::kFC) {
    ++count->fc_relu;
    return;
  }
  op->set_type("ConvFusion");
  if (activation.type() == "Relu") {
    ++count->conv_relu;
    return;
  }
  Argument name;
  name.set_name("activation");
  name.set_s(activation.type());
  SetArgument(op, name);
  for (const std::string& carried : ConvActivationArgs(activation.type())) {
    for (Argument arg : activation.arg()) {
      if (arg.name() != carried) continue;
      arg.set_name("activation_" + carried);
      SetArgument(op, arg);
    }
  }
  ++count->conv_activation;
}

// The op x * gate(x) is when `gate` is Sigmoid (Swish) or HardSigmoid with
// alpha 1/6 and beta 1/2 (HardSwish); "" otherwise.
std::string SelfGatedType(const OperatorDef& gate) {
  if (gate.type() == "Sigmoid") return "Swish";
  if (gate.type() == "HardSigmoid") {
    const float alpha = FloatArg(gate, "alpha", 0.2f), beta = FloatArg(gate, "beta", 0.5f);
    if (std::abs(alpha - 1.f / 6.f) <= 1e-6f && beta == 0.5f) return "HardSwish";
  }
  return "";
}

// Sigmoid(x) -> s, Mul(x, s) -> y  =>  Swish(x) -> y: SiLU as ONNX exporters
// write it (no Swish op before opset 24); likewise HardSigmoid(x) * x =>
// HardSwish(x), torch's export of hardswish.
bool FuseOneSwish(NetDef* net, const BlobUses& uses, int i) {
  const OperatorDef& sigmoid = net->op(i);
  const std::string fused_type = SelfGatedType(sigmoid);
  if (fused_type.empty() || sigmoid.input_size() != 1 || sigmoid.output_size() != 1 ||
      !RunsOnCpu(*net, sigmoid)) {
    return false;
  }
  const std::string& x = sigmoid.input(0);
  const std::string& s = sigmoid.output(0);
  if (x == s) return false;
  const std::vector<int> readers = uses.ValueReaders(s, i);
  if (readers.size() != 1) return false;
  const int j = readers[0];
  const OperatorDef& mul = net->op(j);
  if (mul.type() != "Mul" || mul.input_size() != 2 || mul.output_size() != 1 ||
      !RunsOnCpu(*net, mul) || !uses.IsPrivateLink(s, i, j)) {
    return false;
  }
  const bool pair =
      (mul.input(0) == x && mul.input(1) == s) || (mul.input(0) == s && mul.input(1) == x);
  // x must still hold the Sigmoid's input when Mul reads it, and y must be
  // free between the two ops, where the Swish now writes it.
  if (!pair || uses.TouchedBetween(mul.output(0), i, j)) return false;
  for (int k : uses.Writers(x)) {
    if (k > i && k < j) return false;
  }
  OperatorDef* swish = net->mutable_op(i);
  swish->set_type(fused_type);
  swish->clear_arg();
  swish->set_output(0, mul.output(0));
  net->mutable_op()->DeleteSubrange(j, 1);
  return true;
}

int FuseSwish(NetDef* net) {
  int fused = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    const BlobUses uses(*net);
    for (int i = 0; i < net->op_size() && !changed; ++i) changed = FuseOneSwish(net, uses, i);
    fused += changed;
  }
  return fused;
}

}  // namespace

NetDef FuseActivation(const NetDef& input_net, ActivationFusions* fused) {
  NetDef net = input_net;
  ActivationFusions count;
  count.swish = FuseSwish(&net);
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
      const OperatorDef& activation = net.op(j);
      if (!IsFusableActivation(net, producer, activation, link) ||
          !uses.IsPrivateLink(link, i, j)) {
        continue;
      }
      if (uses.TouchedBetween(activation.output(0), i, j)) continue;
      AbsorbActivation(producer, activation, net.mutable_op(i), &count);
      net.mutable_op()->DeleteSubrange(j, 1);
      changed = true;
    }
  }
  if (fused != nullptr) *fused = count;
  return net;
}

}  // namespace transforms
}  // namespace doppio
