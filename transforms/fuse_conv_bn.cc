#include "transforms/fuse_conv_bn.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

bool IsConv(const OperatorDef& op) {
  return op.type() == "Conv" || op.type() == "Conv1D" || op.type() == "Conv2D" ||
         op.type() == "Conv3D";
}

// The float tensor held by a constant input blob, or nullptr when the pass
// cannot rely on it (absent, not float, written by the net itself, or not
// `per_channel` values per channel of `channels`).
const Tensor* ConstantFloat(const Workspace& workspace, const BlobUses& uses,
                            const std::string& name, int64_t channels) {
  if (!uses.Writers(name).empty()) return nullptr;
  const Blob* blob = workspace.GetBlob(name);
  if (blob == nullptr || !blob->IsTensor()) return nullptr;
  const Tensor& tensor = blob->GetTensor();
  if (tensor.dtype() != DataType::kFloat || !tensor.has_storage() || channels <= 0) {
    return nullptr;
  }
  if (tensor.numel() == 0 || tensor.numel() % channels != 0) return nullptr;
  return &tensor;
}

struct FoldInputs {
  const Tensor* filter = nullptr;
  const Tensor* bias = nullptr;  // null: the Conv has none
  const Tensor* scale = nullptr;
  const Tensor* shift = nullptr;
  const Tensor* mean = nullptr;
  const Tensor* var = nullptr;
  float epsilon = 1e-5f;
};

bool IsOneValuePerChannel(const Tensor* tensor, int64_t channels) {
  return tensor != nullptr && tensor->numel() == channels;
}

// Whether op `conv_index` and op `bn_index` form a pair this pass may fold;
// on success fills `in`.
bool CanFold(const NetDef& net, const BlobUses& uses, const Workspace& workspace,
             int conv_index, int bn_index, FoldInputs* in) {
  const OperatorDef& conv = net.op(conv_index);
  const OperatorDef& bn = net.op(bn_index);
  if (bn.type() != "SpatialBN" || bn.input_size() != 5 || bn.output_size() != 1) return false;
  if (bn.input(0) != conv.output(0) || IntArg(bn, "is_test", 0) == 0) return false;
  if (!RunsOnCpu(net, conv) || !RunsOnCpu(net, bn)) return false;
  if (StringArg(conv, "order", "NCHW") != StringArg(bn, "order", "NCHW")) return false;
  if (!uses.IsPrivateLink(conv.output(0), conv_index, bn_index)) return false;
  if (uses.TouchedBetween(bn.output(0), conv_index, bn_index)) return false;

  const Blob* filter_blob = workspace.GetBlob(conv.input(1));
  if (filter_blob == nullptr || !filter_blob->IsTensor()) return false;
  const Tensor& filter_tensor = filter_blob->GetTensor();
  if (filter_tensor.ndim() < 3) return false;
  const int64_t channels = filter_tensor.dim(0);
  in->filter = ConstantFloat(workspace, uses, conv.input(1), channels);
  if (in->filter == nullptr) return false;
  if (conv.input_size() == 3) {
    in->bias = ConstantFloat(workspace, uses, conv.input(2), channels);
    if (!IsOneValuePerChannel(in->bias, channels)) return false;
  }
  in->scale = ConstantFloat(workspace, uses, bn.input(1), channels);
  in->shift = ConstantFloat(workspace, uses, bn.input(2), channels);
  in->mean = ConstantFloat(workspace, uses, bn.input(3), channels);
  in->var = ConstantFloat(workspace, uses, bn.input(4), channels);
  for (const Tensor* tensor : {in->scale, in->shift, in->mean, in->var}) {
    if (!IsOneValuePerChannel(tensor, channels)) return false;
  }
  in->epsilon = FloatArg(bn, "epsilon", 1e-5f);
  return true;
}

// Writes the folded filter and bias into new blobs; returns their names.
std::pair<std::string, std::string> WriteFolded(const NetDef& net, const OperatorDef& conv,
                                                const FoldInputs& in, Workspace* workspace) {
  const int64_t channels = in.filter->dim(0);
  const int64_t per_channel = in.filter->numel() / channels;
  auto filter = std::make_unique<Tensor>(in.filter->dims(), DataType::kFloat);
  auto bias = std::make_unique<Tensor>(std::vector<int64_t>{channels}, DataType::kFloat);
  const float* w = in.filter->data<float>();
  float* folded_w = filter->mutable_data<float>();
  float* folded_b = bias->mutable_data<float>();
  const float* scale = in.scale->data<float>();
  const float* shift = in.shift->data<float>();
  const float* mean = in.mean->data<float>();
  const float* var = in.var->data<float>();
  for (int64_t m = 0; m < channels; ++m) {
    // In double: the fold then rounds once per value, as close to the
    // unfused net as float storage allows.
    const double k = scale[m] / std::sqrt(static_cast<double>(var[m]) + in.epsilon);
    for (int64_t i = 0; i < per_channel; ++i) {
      folded_w[m * per_channel + i] = static_cast<float>(w[m * per_channel + i] * k);
    }
    const double b = in.bias != nullptr ? in.bias->data<float>()[m] : 0.0;
    folded_b[m] = static_cast<float>((b - mean[m]) * k + shift[m]);
  }
  const std::string filter_name = UniqueBlobName(conv.input(1) + "_bn_folded", net, workspace);
  workspace->CreateBlob(filter_name)->Reset(std::move(filter));
  const std::string bias_base =
      conv.input_size() == 3 ? conv.input(2) + "_bn_folded" : conv.output(0) + "_bn_bias";
  const std::string bias_name = UniqueBlobName(bias_base, net, workspace);
  workspace->CreateBlob(bias_name)->Reset(std::move(bias));
  return {filter_name, bias_name};
}

}  // namespace

NetDef FuseConvBN(const NetDef& input_net, Workspace* workspace, int* fused) {
  NetDef net = input_net;
  int count = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    const BlobUses uses(net);
    for (int i = 0; i < net.op_size() && !changed; ++i) {
      const OperatorDef& conv = net.op(i);
      if (!IsConv(conv) || conv.output_size() != 1 || conv.input_size() < 2) continue;
      const std::vector<int> readers = uses.ValueReaders(conv.output(0), i);
      if (readers.size() != 1) continue;
      const int j = readers[0];
      FoldInputs in;
      if (!CanFold(net, uses, *workspace, i, j, &in)) continue;
      const auto names = WriteFolded(net, conv, in, workspace);
      OperatorDef folded = conv;
      folded.clear_input();
      folded.add_input(conv.input(0));
      folded.add_input(names.first);
      folded.add_input(names.second);
      folded.set_output(0, net.op(j).output(0));
      // A net that declares its inputs must declare the new ones too.
      if (net.external_input_size() > 0) {
        net.add_external_input(names.first);
        net.add_external_input(names.second);
      }
      *net.mutable_op(i) = folded;
      net.mutable_op()->DeleteSubrange(j, 1);
      ++count;
      changed = true;
    }
  }
  if (fused != nullptr) *fused = count;
  return net;
}

}  // namespace transforms
}  // namespace doppio
