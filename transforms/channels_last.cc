#include "transforms/channels_last.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/argument.h"
#include "core/shape_walk.h"
#include "core/workspace.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

namespace {

bool IsConv(const OperatorDef& op) { return op.type() == "Conv" || op.type() == "ConvFusion"; }

bool IsPointwise(const std::string& type) {
  static const std::set<std::string> kTypes = {
      "Relu", "LeakyRelu", "Clip", "Sigmoid",  "Tanh", "Elu",   "Swish",   "Gelu",    "Exp",
      "Abs",  "Neg",       "Sqrt", "Softplus", "Copy", "Scale", "Dropout", "Negative"};
  return kTypes.count(type) > 0;
}

bool IsBinary(const std::string& type) {
  return type == "Add" || type == "Sub" || type == "Mul" || type == "Div" || type == "Sum";
}

// The 4-D float filter of a Conv, when it is a constant of the workspace.
const Tensor* ConstantFilter(const NetDef& net, const Workspace& workspace, const BlobUses& uses,
                             const OperatorDef& op) {
  if (op.input_size() < 2 || !uses.Writers(op.input(1)).empty()) return nullptr;
  const Blob* blob = workspace.GetBlob(op.input(1));
  if (blob == nullptr || !blob->IsTensor()) return nullptr;
  const Tensor& filter = blob->GetTensor();
  if (filter.dtype() != DataType::kFloat || filter.ndim() != 4 || !filter.has_storage()) {
    return nullptr;
  }
  return &filter;
}

bool IsSeed(const NetDef& net, const Workspace& workspace, const BlobUses& uses,
            const OperatorDef& op) {
  return IsConv(op) && op.output_size() == 1 && RunsOnCpu(net, op) &&
         StringArg(op, "order", "NCHW") == "NCHW" &&
         ConstantFilter(net, workspace, uses, op) != nullptr;
}

// The inputs that carry the activation's layout; empty when the op cannot
// run in NHWC as this pass rewrites it.
std::vector<int> DataInputs(const NetDef& net, const OperatorDef& op) {
  if (!RunsOnCpu(net, op) || op.input_size() == 0) return {};
  const std::string& type = op.type();
  if (type == "Concat") {
    const int axis = IntArg(op, "axis", 1);
    if (HasArg(op, "add_axis") || (axis != 1 && axis != -3) ||
        StringArg(op, "order", "NCHW") != "NCHW") {
      return {};
    }
    std::vector<int> all(op.input_size());
    for (int i = 0; i < op.input_size(); ++i) all[i] = i;
    return all;
  }
  if (op.output_size() != 1) return {};
  if (type == "MaxPool" || type == "AveragePool" || type == "LRN" ||
      (type == "SpatialBN" && IntArg(op, "is_test", 0) != 0)) {
    if (StringArg(op, "order", "NCHW") != "NCHW") return {};
    return {0};
  }
  if (IsPointwise(type)) {
    if (type == "Dropout" && IntArg(op, "is_test", 0) == 0) return {};
    return {0};
  }
  if (IsBinary(type) && !HasLegacyBroadcastAxis(op)) {
    std::vector<int> all(op.input_size());
    for (int i = 0; i < op.input_size(); ++i) all[i] = i;
    return all;
  }
  return {};
}

// The inputs of a region op in the region's layout: a Conv's X (and the
// summand of ConvFusion's sum fusions, its last input), else DataInputs.
std::vector<int> LayoutInputs(const NetDef& net, const OperatorDef& op) {
  if (!IsConv(op)) return DataInputs(net, op);
  const int fusion = op.type() == "ConvFusion" ? IntArg(op, "fusion_type", 0) : 0;
  if (fusion == 2 || fusion == 3) return {0, op.input_size() - 1};
  return {0};
}

// Op indices writing each value each op reads: writer_of[i][k] is the last
// writer of op i's input k before it (-1: the net's input).
std::vector<std::vector<int>> InputWriters(const NetDef& net) {
  std::map<std::string, int> last;
  std::vector<std::vector<int>> writers(net.op_size());
  for (int i = 0; i < net.op_size(); ++i) {
    for (const std::string& name : net.op(i).input()) {
      const auto found = last.find(name);
      writers[i].push_back(found == last.end() ? -1 : found->second);
    }
    for (const std::string& name : net.op(i).output()) last[name] = i;
  }
  return writers;
}

std::set<int> GrowRegion(const NetDef& net, const Workspace& workspace, const BlobUses& uses,
                         const std::vector<std::vector<int>>& writers,
                         const std::set<int>& banned) {
  std::set<int> region;
  for (int i = 0; i < net.op_size(); ++i) {
    if (banned.count(i)) continue;
    const OperatorDef& op = net.op(i);
    if (IsSeed(net, workspace, uses, op)) {
      region.insert(i);
      continue;
    }
    const std::vector<int> data = DataInputs(net, op);
    bool all_region = !data.empty();
    for (int k : data) all_region = all_region && region.count(writers[i][k]) > 0;
    if (all_region) region.insert(i);
  }
  return region;
}

// Region writers of blobs the region cannot own: written outside too, or
// read by a region op other than as a data input.
std::set<int> Conflicts(const NetDef& net, const std::set<int>& region) {
  std::set<int> conflicts;
  std::map<std::string, std::vector<int>> writers;
  for (int i = 0; i < net.op_size(); ++i) {
    for (const std::string& name : net.op(i).output()) writers[name].push_back(i);
  }
  for (int i : region) {
    const std::string& blob = net.op(i).output(0);
    bool shared = false;
    for (int w : writers[blob]) shared = shared || !region.count(w) || net.op(w).output(0) != blob;
    for (int r = 0; r < net.op_size() && !shared; ++r) {
      if (!region.count(r)) continue;
      const OperatorDef& reader = net.op(r);
      const std::vector<int> data = LayoutInputs(net, reader);
      for (int k = 0; k < reader.input_size(); ++k) {
        const bool is_data = std::find(data.begin(), data.end(), k) != data.end();
        if (reader.input(k) == blob && !is_data) shared = true;
      }
    }
    if (shared) {
      for (int w : writers[blob]) {
        if (region.count(w)) conflicts.insert(w);
      }
    }
  }
  return conflicts;
}

Argument StringArgument(const std::string& name, const std::string& value) {
  Argument arg;
  arg.set_name(name);
  arg.set_s(value);
  return arg;
}

OperatorDef OrderSwitch(const std::string& type, const std::string& from, const std::string& to,
                        const OperatorDef& near) {
  OperatorDef op;
  op.set_type(type);
  op.add_input(from);
  op.add_output(to);
  *op.mutable_device_option() = near.device_option();
  return op;
}

// The NHWC filter [M, kh, kw, C/g] of an NCHW one, as a new workspace blob
// and external input of `out`.
std::string NhwcFilter(NetDef* out, Workspace* workspace, const std::string& name,
                       std::map<std::string, std::string>* made) {
  const auto found = made->find(name);
  if (found != made->end()) return found->second;
  const Tensor& nchw = workspace->GetBlob(name)->GetTensor();
  const int64_t M = nchw.dim(0), C = nchw.dim(1), H = nchw.dim(2), W = nchw.dim(3);
  auto nhwc = std::make_unique<Tensor>(std::vector<int64_t>{M, H, W, C}, DataType::kFloat);
  const float* from = nchw.data<float>();
  float* to = nhwc->mutable_data<float>();
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t w = 0; w < W; ++w) {
          to[((m * H + h) * W + w) * C + c] = from[((m * C + c) * H + h) * W + w];
        }
      }
    }
  }
  const std::string nhwc_name = UniqueBlobName(name + "_nhwc", *out, workspace);
  workspace->CreateBlob(nhwc_name)->Reset(std::move(nhwc));
  // A net that declares its inputs must declare this one too.
  if (out->external_input_size() > 0) out->add_external_input(nhwc_name);
  (*made)[name] = nhwc_name;
  return nhwc_name;
}

// The region op itself, reading and writing NHWC.
void SwitchArguments(OperatorDef* op) {
  if (op->type() == "Concat") {
    auto* args = op->mutable_arg();
    for (int k = args->size() - 1; k >= 0; --k) {
      if (args->Get(k).name() == "order") args->DeleteSubrange(k, 1);
    }
    SetArgument(op, "axis", 3);
  } else if (IsConv(*op) || op->type() == "MaxPool" || op->type() == "AveragePool" ||
             op->type() == "LRN" || op->type() == "SpatialBN") {
    SetArgument(op, StringArgument("order", "NHWC"));
  }
}

// Phases 1-2: the region grown from the seeds, less the writers of blobs it
// cannot own, until nothing conflicts.
std::set<int> ConflictFreeRegion(const NetDef& net, const Workspace& workspace,
                                 const BlobUses& uses,
                                 const std::vector<std::vector<int>>& writers) {
  std::set<int> banned;
  while (true) {
    std::set<int> region = GrowRegion(net, workspace, uses, writers, banned);
    const std::set<int> conflicts = Conflicts(net, region);
    if (conflicts.empty()) return region;
    banned.insert(conflicts.begin(), conflicts.end());
  }
}

// The connected parts of the region: ops joined by the values they pass.
std::vector<std::set<int>> RegionParts(const std::set<int>& region,
                                       const std::vector<std::vector<int>>& writers) {
  std::map<int, int> parent;
  for (int i : region) parent[i] = i;
  std::function<int(int)> root = [&](int i) {
    return parent[i] == i ? i : parent[i] = root(parent[i]);
  };
  for (int i : region) {
    for (int w : writers[i]) {
      if (region.count(w)) parent[root(i)] = root(w);
    }
  }
  std::map<int, std::set<int>> by_root;
  for (int i : region) by_root[root(i)].insert(i);
  std::vector<std::set<int>> parts;
  for (auto& entry : by_root) parts.push_back(std::move(entry.second));
  return parts;
}

// Elements of `blob`, or -1 when its shape is unknown.
int64_t Elements(const std::map<std::string, TensorShape>& shapes, const std::string& blob) {
  const auto found = shapes.find(blob);
  if (found == shapes.end() || found->second.unknown_shape()) return -1;
  int64_t count = 1;
  for (int64_t dim : found->second.dims()) count *= dim;
  return count;
}

// Phase 3: what one part saves and costs, in activation elements (see the
// header). A shape the walk could not infer prices the part out.
ChannelsLastPart PricePart(const NetDef& net, const BlobUses& uses,
                           const std::vector<std::vector<int>>& writers, const std::set<int>& part,
                           const std::map<std::string, TensorShape>& shapes,
                           const LayoutAdvisor& advise) {
  ChannelsLastPart priced;
  priced.ops = part;
  bool known = true;
  const auto add = [&](int64_t* total, const std::string& blob) {
    const int64_t count = Elements(shapes, blob);
    known = known && count >= 0;
    *total += std::max<int64_t>(count, 0);
  };
  std::set<std::pair<std::string, int>> switched_in;
  for (int i : part) {
    const OperatorDef& op = net.op(i);
    if (IsConv(op)) {
      std::vector<TensorShape> inputs;
      std::string missing;
      const ActivationLayout layout = KnownInputShapes(op, shapes, &inputs, &missing)
                                          ? advise(op, inputs)
                                          : ActivationLayout::kNoPreference;
      if (layout == ActivationLayout::kNhwc || layout == ActivationLayout::kNchw) {
        int64_t* total = layout == ActivationLayout::kNhwc ? &priced.saved : &priced.cost;
        add(total, op.input(0));
        add(total, op.output(0));
      }
    }
    const std::vector<int> data = LayoutInputs(net, op);
    for (int k : data) {
      if (!part.count(writers[i][k]) && switched_in.emplace(op.input(k), writers[i][k]).second) {
        add(&priced.cost, op.input(k));
      }
    }
    const std::string& blob = op.output(0);
    bool read_outside = uses.IsExternalOutput(blob) && uses.Writers(blob).back() == i;
    for (int r : uses.ValueReaders(blob, i)) read_outside = read_outside || !part.count(r);
    if (read_outside) add(&priced.cost, blob);
  }
  if (!known) priced.cost = std::max(priced.cost, priced.saved);
  return priced;
}

}  // namespace

std::string ChannelsLastPlan::ToString(const NetDef& net) const {
  std::string text = std::to_string(region.size()) + " op(s) in NHWC:";
  for (int i : region) text += " #" + std::to_string(i) + " " + net.op(i).type();
  for (const ChannelsLastPart& part : parts) {
    text += "\n  part #" + std::to_string(*part.ops.begin()) + "..#" +
            std::to_string(*part.ops.rbegin()) + " (" + std::to_string(part.ops.size()) +
            " ops): saves " + std::to_string(part.saved) + ", costs " + std::to_string(part.cost) +
            " elements: " + (part.pays() ? "NHWC" : "stays NCHW");
  }
  return text;
}

ChannelsLastPlan PlanChannelsLast(const NetDef& net, const Workspace& workspace,
                                  const ChannelsLastOptions& options) {
  const BlobUses uses(net);
  const std::vector<std::vector<int>> writers = InputWriters(net);
  ChannelsLastPlan plan;
  plan.region = ConflictFreeRegion(net, workspace, uses, writers);
  if (options.always || plan.region.empty()) return plan;
  const std::map<std::string, TensorShape> shapes = InferNetShapes(net, WorkspaceShapes(workspace));
  std::set<int> paying;
  for (const std::set<int>& part : RegionParts(plan.region, writers)) {
    plan.parts.push_back(PricePart(net, uses, writers, part, shapes, options.advise));
    if (plan.parts.back().pays()) paying.insert(part.begin(), part.end());
  }
  plan.region = paying;
  return plan;
}

NetDef ChannelsLast(const NetDef& net, Workspace* workspace, int* switched,
                    const ChannelsLastOptions& options) {
  const ChannelsLastPlan plan = PlanChannelsLast(net, *workspace, options);
  if (switched != nullptr) *switched = static_cast<int>(plan.region.size());
  if (plan.region.empty()) return net;
  const BlobUses uses(net);
  const std::vector<std::vector<int>> writers = InputWriters(net);
  std::map<std::string, std::string> nhwc_name, filters;
  std::map<std::pair<std::string, int>, std::string> switched_in;
  auto region_name = [&](const std::string& blob) {
    auto found = nhwc_name.find(blob);
    if (found == nhwc_name.end()) {
      found = nhwc_name.emplace(blob, UniqueBlobName(blob + "_nhwc", net, workspace)).first;
    }
    return found->second;
  };
  NetDef out = net;
  out.clear_op();
  for (int i = 0; i < net.op_size(); ++i) {
    if (!plan.region.count(i)) {
      *out.add_op() = net.op(i);
      continue;
    }
    OperatorDef op = net.op(i);
    const std::vector<int> data = LayoutInputs(net, op);
    for (int k : data) {
      const std::string blob = op.input(k);
      if (plan.region.count(writers[i][k])) {
        op.set_input(k, region_name(blob));
        continue;
      }
      const auto key = std::make_pair(blob, writers[i][k]);
      if (!switched_in.count(key)) {
        switched_in[key] = UniqueBlobName(blob + "_to_nhwc", out, workspace);
        *out.add_op() = OrderSwitch("NCHW2NHWC", blob, switched_in[key], op);
      }
      op.set_input(k, switched_in[key]);
    }
    if (IsConv(op)) op.set_input(1, NhwcFilter(&out, workspace, op.input(1), &filters));
    const std::string blob = op.output(0);
    op.set_output(0, region_name(blob));
    SwitchArguments(&op);
    *out.add_op() = op;
    bool read_outside = uses.IsExternalOutput(blob) && uses.Writers(blob).back() == i;
    for (int r : uses.ValueReaders(blob, i)) read_outside = read_outside || !plan.region.count(r);
    if (read_outside) *out.add_op() = OrderSwitch("NHWC2NCHW", region_name(blob), blob, op);
  }
  return out;
}

}  // namespace transforms
}  // namespace doppio
