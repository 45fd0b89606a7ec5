#include "transforms/optimize_inference.h"

#include <algorithm>

#include "core/argument.h"
#include "core/enforce.h"
#include "transforms/channels_last.h"
#include "transforms/fuse_activation.h"
#include "transforms/fuse_conv_bn.h"
#include "transforms/fuse_conv_sum.h"
#include "transforms/fuse_matmul_bias.h"
#include "transforms/inplace_activation.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

std::string InferenceOptimizations::Summary() const {
  return std::to_string(conv_bn) + " Conv+SpatialBN, " + std::to_string(conv_relu) +
         " Conv+Relu, " + std::to_string(fc_relu) + " FC+Relu, " + std::to_string(inplace) +
         " in-place activation(s), " + std::to_string(conv_activation) +
         " Conv+other activation(s), " + std::to_string(swish) + " Sigmoid*x->Swish, " +
         std::to_string(matmul_bias) + " MatMul+bias, " + std::to_string(conv_sum) + " Conv+Add, " +
         std::to_string(conv_inference) + " Conv(s) for inference, " +
         std::to_string(channels_last) + " op(s) in NHWC";
}

InferencePasses InferencePasses::Parse(const std::string& list) {
  InferencePasses passes;
  if (list == "all" || list == "default") {
    passes.channels_last_always = list == "all";
    return passes;
  }
  passes.conv_bn = passes.matmul_bias = passes.activation = passes.conv_sum =
      passes.conv_inference = passes.channels_last = passes.inplace = false;
  if (list == "none" || list.empty()) return passes;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    if (name == "conv_bn") {
      passes.conv_bn = true;
    } else if (name == "matmul_bias") {
      passes.matmul_bias = true;
    } else if (name == "activation") {
      passes.activation = true;
    } else if (name == "conv_sum") {
      passes.conv_sum = true;
    } else if (name == "conv_inference") {
      passes.conv_inference = true;
    } else if (name == "channels_last") {
      passes.channels_last = true;
    } else if (name == "channels_last_always") {
      passes.channels_last_always = true;
    } else if (name == "inplace") {
      passes.inplace = true;
    } else if (name == "default") {
      passes.conv_bn = passes.matmul_bias = passes.activation = passes.conv_sum =
          passes.conv_inference = passes.channels_last = passes.inplace = true;
    } else {
      DOPPIO_THROW("unknown inference pass '", name, "' in '", list,
                   "'; the passes are conv_bn, matmul_bias, activation, conv_sum, conv_inference, "
                   "channels_last, "
                   "channels_last_always, inplace (or "
                   "default, all, none)");
    }
    start = comma + 1;
  }
  return passes;
}

NetDef MarkConvsForInference(const NetDef& input_net, int* marked) {
  NetDef net = input_net;
  int count = 0;
  for (OperatorDef& op : *net.mutable_op()) {
    if (op.type() != "Conv" || !RunsOnCpu(net, op) || HasArg(op, "training_mode")) continue;
    SetArgument(&op, "training_mode", 0);
    ++count;
  }
  if (marked != nullptr) *marked = count;
  return net;
}

NetDef OptimizeForInference(const NetDef& input_net, Workspace* workspace,
                            const std::vector<std::string>& keep,
                            InferenceOptimizations* done, const InferencePasses& passes) {
  NetDef net = input_net;
  // The passes never touch external outputs; `keep` joins them for the
  // duration and leaves again, so the returned net declares what it did.
  // A net that declares none hands out what it leaves behind: keep that.
  std::vector<std::string> kept = keep;
  if (net.external_output_size() == 0) {
    for (const std::string& sink : SinkBlobs(net)) kept.push_back(sink);
  }
  std::vector<std::string> added;
  for (const std::string& name : kept) {
    const auto& outputs = net.external_output();
    if (std::find(outputs.begin(), outputs.end(), name) == outputs.end()) {
      net.add_external_output(name);
      added.push_back(name);
    }
  }
  InferenceOptimizations stats;
  if (passes.conv_bn) net = FuseConvBN(net, workspace, &stats.conv_bn);
  if (passes.matmul_bias && workspace != nullptr) {
    net = FuseMatMulBias(net, *workspace, &stats.matmul_bias);
  }
  if (passes.activation) {
    ActivationFusions activations;
    net = FuseActivation(net, &activations);
    stats.swish = activations.swish;
    stats.conv_relu = activations.conv_relu;
    stats.conv_activation = activations.conv_activation;
    stats.fc_relu = activations.fc_relu;
  }
  if (passes.conv_sum && workspace != nullptr) {
    net = FuseConvSum(net, *workspace, &stats.conv_sum);
  }
  if (passes.conv_inference) net = MarkConvsForInference(net, &stats.conv_inference);
  if ((passes.channels_last || passes.channels_last_always) && workspace != nullptr) {
    ChannelsLastOptions options;
    options.always = passes.channels_last_always;
    net = ChannelsLast(net, workspace, &stats.channels_last, options);
  }
  if (passes.inplace) net = InplaceActivation(net, &stats.inplace);
  if (!added.empty()) {
    auto* outputs = net.mutable_external_output();
    outputs->erase(std::remove_if(outputs->begin(), outputs->end(),
                                  [&](const std::string& name) {
                                    return std::find(added.begin(), added.end(), name) !=
                                           added.end();
                                  }),
                   outputs->end());
  }
  if (done != nullptr) *done = stats;
  return net;
}

}  // namespace transforms
}  // namespace doppio
