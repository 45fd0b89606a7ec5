#include "operators/recurrent_network_op.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/net.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {
namespace rnn {

namespace {

class CpuMemory final : public DeviceMemory {
 public:
  Device device() const override { return Device{DeviceKind::kCPU, 0}; }
  void Copy(const float* from, float* to, int64_t n) override {
    if (n > 0) std::memcpy(to, from, sizeof(float) * n);
  }
  void Zero(float* data, int64_t n) override { std::fill(data, data + n, 0.0f); }
  void AddInto(const float* from, float* to, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) to[i] += from[i];
  }
};

std::unique_ptr<DeviceMemory> MakeCpuMemory(const DeviceOption&) {
  return std::make_unique<CpuMemory>();
}

// Written during static initialization only (RegisterDeviceMemory), read
// after it.
std::map<DeviceKind, DeviceMemoryMaker>& MemoryMakers() {
  static std::map<DeviceKind, DeviceMemoryMaker> makers{{DeviceKind::kCPU, &MakeCpuMemory}};
  return makers;
}

}  // namespace

bool RegisterDeviceMemory(DeviceKind kind, DeviceMemoryMaker maker) {
  MemoryMakers()[kind] = maker;
  return true;
}

std::unique_ptr<DeviceMemory> MakeDeviceMemory(const OperatorDef& def) {
  const Device device = DeviceFromOption(def.device_option());
  auto it = MemoryMakers().find(device.kind);
  DOPPIO_ENFORCE(it != MemoryMakers().end(), def.type(), " cannot run on device type ",
                 def.device_option().device_type(), ": this build has no kernels for it");
  return it->second(def.device_option());
}

const Tensor& InputOnDevice(const OperatorBase& op, int index, const DeviceMemory& memory) {
  const Blob& blob = op.InputBlob(index);
  DOPPIO_ENFORCE(blob.IsTensor(), "input ", index, " ('", op.input_name(index),
                 "') should be a tensor but holds ", blob.TypeName());
  const Tensor& tensor = blob.GetTensor();
  // CPU ids are logical devices (cpu_0, cpu_1) sharing one memory.
  const Device device = memory.device();
  EnforceInputOnDevice(
      op, index, tensor,
      device.kind == DeviceKind::kCPU ? Device{device.kind, tensor.device().id} : device);
  return tensor;
}

std::vector<Link> ReadLinks(const OperatorBase& op, const std::string& internal_arg,
                            const std::string& external_arg, const std::string& offset_arg,
                            const std::string& window_arg) {
  const auto internal = op.GetRepeatedArgument<std::string>(internal_arg);
  const auto external = op.GetRepeatedArgument<std::string>(external_arg);
  const auto offset = op.GetRepeatedArgument<int>(offset_arg);
  const std::vector<int> ones(offset.size(), 1);
  const auto window = window_arg.empty() ? ones : op.GetRepeatedArgument<int>(window_arg, ones);
  DOPPIO_ENFORCE(internal.size() == offset.size() && external.size() == offset.size() &&
                     window.size() == offset.size(),
                 "arguments '", internal_arg, "' (", internal.size(), "), '", external_arg, "' (",
                 external.size(), "), '", offset_arg, "' (", offset.size(), ")",
                 window_arg.empty() ? "" : " and '" + window_arg + "'",
                 " must have one entry per link");
  std::vector<Link> links;
  for (size_t i = 0; i < offset.size(); ++i) {
    DOPPIO_ENFORCE(offset[i] >= 0 && window[i] >= 1, "link '", internal[i], "' -> '", external[i],
                   "' has offset ", offset[i], " and window ", window[i],
                   "; the offset must be >= 0 and the window >= 1");
    links.push_back(Link{internal[i], external[i], offset[i], window[i]});
  }
  return links;
}

NetDef ReadStepNet(const OperatorBase& op, const std::string& name) {
  ArgumentHelper args(op.def());
  if (args.HasSingleOfType<NetDef>(name)) return args.GetSingle<NetDef>(name, NetDef());
  const std::string text = args.GetSingle<std::string>(name, "");
  DOPPIO_ENFORCE(!text.empty(), "argument '", name,
                 "' is missing: it must hold the step net (a NetDef, or its text format)");
  NetDef net;
  DOPPIO_ENFORCE(google::protobuf::TextFormat::ParseFromString(text, &net), "argument '", name,
                 "' is neither a NetDef nor a NetDef in text format");
  return net;
}

void PrependOps(std::vector<OperatorDef> ops, NetDef* net) {
  for (const OperatorDef& op : net->op()) ops.push_back(op);
  net->clear_op();
  for (OperatorDef& op : ops) *net->add_op() = std::move(op);
}

namespace {
bool Has(const google::protobuf::RepeatedPtrField<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
}  // namespace

void AddApplyLinkOps(const std::vector<Link>& links, const std::string& timestep,
                     const DeviceOption& device, NetDef* net) {
  std::vector<OperatorDef> ops;
  for (const Link& link : links) {
    OperatorDef op;
    op.set_type("rnn_internal_apply_link");
    op.add_input(timestep);
    op.add_input(link.external);
    op.add_output(link.internal);
    op.add_output(link.external);
    *op.mutable_device_option() = device;
    SetArgument(&op, "offset", link.offset);
    SetArgument(&op, "window", link.window);
    ops.push_back(op);
    // A step op that writes the linked blob before anything reads it must
    // run after the link makes the blob a view.
    for (OperatorDef& step_op : *net->mutable_op()) {
      if (Has(step_op.input(), link.internal)) break;
      if (Has(step_op.output(), link.internal)) {
        step_op.add_control_input(link.internal);
        break;
      }
    }
    net->add_external_input(link.internal);
    net->add_external_input(link.external);
  }
  PrependOps(std::move(ops), net);
}

int ReadTimestep(const OperatorBase& op, int index, const Tensor& timestep) {
  DOPPIO_ENFORCE(timestep.dtype() == DataType::kInt32 && timestep.numel() == 1, "timestep '",
                 op.input_name(index), "' must be one int32, not ", timestep.DebugString());
  return timestep.data<int32_t>()[0];
}

void SetTimestep(Workspace* ws, const std::string& name, int t) {
  Tensor* tensor = ws->CreateBlob(name)->GetMutableTensor();
  tensor->Resize({1});
  tensor->mutable_data<int32_t>()[0] = t;
}

void RunStepNet(Workspace* ws, const NetDef& def) {
  NetBase* net = ws->GetNet(def.name());
  if (net == nullptr) net = ws->CreateNet(def);
  net->Run();
}

void BlobArguments(OpSchema& schema) {
  schema
      .BlobNameArgs({"timestep", "recurrent_states", "link_internal", "link_external", "alias_src",
                     "alias_dst", "backward_link_internal", "backward_link_external", "param_grads",
                     "recompute_blobs_on_backward"})
      .NetArgs({"step_net", "backward_step_net"});
}

std::string Renamed(const OperatorBase& op, const std::string& blob) {
  return op.GetSingleArgument<std::string>(blob + ".rename", blob);
}

}  // namespace rnn

namespace {

// Whether the op carries a backward step net (ExtractPredictorNet leaves
// the argument there, empty).
bool HasBackwardStepNet(const OperatorBase& op) {
  for (const Argument& arg : op.def().arg()) {
    if (arg.name() == "backward_step_net") return arg.n().op_size() > 0 || !arg.s().empty();
  }
  return false;
}

// rnn_internal_apply_link: makes `internal` a view of `window` slices of
// `external` starting at timestep + offset.
class RnnApplyLinkOp final : public Operator<CPUContext> {
 public:
  RnnApplyLinkOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        offset_(GetSingleArgument<int>("offset", -1)),
        window_(GetSingleArgument<int>("window", -1)) {
    DOPPIO_ENFORCE(offset_ >= 0, "argument 'offset' must be set and >= 0");
    DOPPIO_ENFORCE(window_ >= 1, "argument 'window' must be set and >= 1");
  }
  void RunOnDevice() override {
    const int t = rnn::ReadTimestep(*this, 0, Input(0));
    const Tensor& external = Input(1);
    DOPPIO_ENFORCE(external.ndim() >= 1 && t + offset_ + window_ <= external.dim(0), "timestep ", t,
                   " with offset ", offset_, " and window ", window_, " is outside '",
                   input_name(1), "' of shape ", external.dims());
    // A view on external's device, which need not be the op's.
    OutputBlob(0)->GetMutable<Tensor>()->ShareSlice(external, t + offset_, window_);
  }

 private:
  int offset_;
  int window_;
};

// rnn_internal_accumulate_gradient_input: g[t + offset] += og[t].
class RnnAccumulateInputGradientOp final : public Operator<CPUContext> {
 public:
  RnnAccumulateInputGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        memory_(rnn::MakeDeviceMemory(def)),
        offset_(GetSingleArgument<int>("offset", -1)) {
    DOPPIO_ENFORCE(offset_ >= 0, "argument 'offset' must be set and >= 0");
  }
  void RunOnDevice() override {
    const int t = rnn::ReadTimestep(*this, 0, Input(0));
    const Tensor& og = rnn::InputOnDevice(*this, 1, *memory_);
    rnn::InputOnDevice(*this, 2, *memory_);
    // In place on input 2, on the op's device (Output() would make a host one).
    Tensor* g = OutputBlob(0)->GetMutable<Tensor>();
    DOPPIO_ENFORCE(og.dtype() == DataType::kFloat && g->dtype() == DataType::kFloat,
                   "gradients must be float32");
    DOPPIO_ENFORCE(g->ndim() >= 1 && g->dim(0) > 0 && og.ndim() >= 1 && og.dim(0) > 0,
                   "gradients must have a time dim");
    const int64_t slice = g->numel() / g->dim(0);
    DOPPIO_ENFORCE_EQ(og.numel() / og.dim(0), slice, "'", input_name(1), "' ", og.dims(), " and '",
                      input_name(2), "' ", g->dims(), " differ per timestep");
    DOPPIO_ENFORCE(t + offset_ < g->dim(0) && t < og.dim(0), "timestep ", t,
                   " is outside the gradients ", og.dims(), " / ", g->dims());
    memory_->AddInto(og.data<float>() + t * slice, g->mutable_data<float>() + (t + offset_) * slice,
                     slice);
  }

 private:
  std::unique_ptr<rnn::DeviceMemory> memory_;
  int offset_;
};

// RecurrentNetworkBlobFetcher: copies the tensors of a RecurrentNetwork's
// step workspaces into the op's workspace as "<prefix>_<blob><t>" (for
// inspecting a step's intermediates from Python); outputs their names.
class RecurrentNetworkBlobFetcherOp final : public Operator<CPUContext> {
 public:
  RecurrentNetworkBlobFetcherOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace),
        prefix_(GetSingleArgument<std::string>("prefix", "rnn")) {}
  void RunOnDevice() override {
    const auto& scratch = InputAs<rnn::StepWorkspaces>(0);
    std::vector<std::string> names;
    for (size_t t = 0; t < scratch.steps.size(); ++t) {
      if (!scratch.steps[t]) continue;
      for (const auto& name : scratch.steps[t]->LocalBlobs()) {
        const Blob* blob = scratch.steps[t]->GetBlob(name);
        if (!blob->IsTensor() || blob->GetTensor().device().kind != DeviceKind::kCPU) continue;
        const Tensor& tensor = blob->GetTensor();
        if (tensor.numel() > 0 && !tensor.has_storage()) continue;
        names.push_back(prefix_ + "_" + name + std::to_string(t));
        workspace()->CreateBlob(names.back())->GetMutableTensor()->CopyFrom(tensor);
      }
    }
    Tensor* out = Output(0);
    out->Resize({static_cast<int64_t>(names.size())});
    std::string* data = out->mutable_data<std::string>();
    for (size_t i = 0; i < names.size(); ++i) data[i] = names[i];
  }

 private:
  std::string prefix_;
};

}  // namespace

RecurrentNetworkOp::RecurrentNetworkOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      memory_(rnn::MakeDeviceMemory(def)),
      step_net_(rnn::ReadStepNet(*this, "step_net")),
      timestep_(GetSingleArgument<std::string>("timestep", "timestep")),
      has_backward_pass_(HasBackwardStepNet(*this)),
      links_(rnn::ReadLinks(*this, "link_internal", "link_external", "link_offset", "link_window")),
      recompute_blobs_(GetRepeatedArgument<std::string>("recompute_blobs_on_backward")) {
  const auto states = GetRepeatedArgument<std::string>("recurrent_states");
  const auto ids = GetRepeatedArgument<int>("initial_recurrent_state_ids");
  DOPPIO_ENFORCE_EQ(states.size(), ids.size(),
                    "'recurrent_states' and 'initial_recurrent_state_ids' must pair up");
  for (size_t i = 0; i < states.size(); ++i) {
    DOPPIO_ENFORCE(0 < ids[i] && ids[i] < InputSize(), "initial_recurrent_state_ids[", i,
                   "] = ", ids[i], " is not one of the op's inputs 1..", InputSize() - 1);
    // States live in the op's workspace: the gradient op reads them too.
    workspace->CreateBlob(states[i]);
    recurrent_inputs_.push_back(rnn::RecurrentInput{states[i], ids[i]});
  }
  const auto src = GetRepeatedArgument<std::string>("alias_src");
  const auto dst = GetRepeatedArgument<std::string>("alias_dst");
  const auto offset = GetRepeatedArgument<int>("alias_offset");
  DOPPIO_ENFORCE(src.size() == offset.size() && dst.size() == offset.size(),
                 "'alias_src', 'alias_dst' and 'alias_offset' must have one entry per alias");
  for (size_t i = 0; i < src.size(); ++i) {
    DOPPIO_ENFORCE(std::count(def.output().begin(), def.output().end(), dst[i]) > 0, "alias_dst '",
                   dst[i], "' is not an output of the op");
    aliases_.push_back(rnn::Alias{src[i], dst[i], offset[i]});
  }
  DOPPIO_ENFORCE(OutputSize() >= 1, "the last output holds the step workspaces");
  step_net_.add_external_input(timestep_);
  rnn::AddApplyLinkOps(links_, timestep_, def.device_option(), &step_net_);
  // Caffe2 marks step nets "rnn" (its parallel step executor); Doppio runs
  // the steps one after another.
  step_net_.set_type("simple");
  if (step_net_.name().empty()) step_net_.set_name(output_name(OutputSize() - 1) + "/step_net");
}

void RecurrentNetworkOp::InitializeState(const rnn::RecurrentInput& input, int64_t seq_len,
                                         int64_t batch) {
  const Tensor& init = rnn::InputOnDevice(*this, input.input, *memory_);
  const std::string& name = input_name(input.input);
  DOPPIO_ENFORCE(init.ndim() >= 1 && init.ndim() <= 3 && init.dtype() == DataType::kFloat,
                 "initial state '", name, "' must be float32 [D], [N, D] or [L, N, D], not ",
                 init.DebugString());
  if (init.ndim() >= 2) {
    DOPPIO_ENFORCE_EQ(init.dim(-2), batch, "initial state '", name, "' ", init.dims(),
                      " must have the batch size of the input sequence");
  }
  const int64_t depth = init.dim(-1);
  const int64_t initial_length = init.ndim() == 3 ? init.dim(0) : 1;
  Tensor* state = workspace()->GetBlob(input.state)->GetMutableTensor(init.device());
  state->Resize({seq_len + initial_length, batch, depth});
  float* data = state->mutable_data<float>();
  const float* from = init.data<float>();
  if (init.ndim() >= 2) {
    memory_->Copy(from, data, initial_length * batch * depth);
  } else {
    // One initial state for the whole batch.
    for (int64_t n = 0; n < batch; ++n) memory_->Copy(from, data + n * depth, depth);
  }
}

Workspace* RecurrentNetworkOp::StepWorkspace(rnn::StepWorkspaces* scratch, int t) {
  // Without a backward pass nothing reads a step's workspace after the next
  // step, so two alternate.
  auto& slot = has_backward_pass_ ? scratch->steps[t] : scratch->steps[t % 2];
  if (!slot) slot = std::make_shared<Workspace>(scratch->shared.get());
  return slot.get();
}

void RecurrentNetworkOp::RunOnDevice() {
  const Tensor& sequence = rnn::InputOnDevice(*this, 0, *memory_);
  DOPPIO_ENFORCE(sequence.ndim() >= 2, "input sequence '", input_name(0),
                 "' must be [T, N, ...], not ", sequence.DebugString());
  const int64_t seq_len = sequence.dim(0);
  DOPPIO_ENFORCE(seq_len <= INT_MAX, "sequence too long");
  for (const auto& input : recurrent_inputs_) InitializeState(input, seq_len, sequence.dim(1));

  auto* scratch = OutputAs<rnn::StepWorkspaces>(OutputSize() - 1);
  if (!scratch->shared) scratch->shared = std::make_shared<Workspace>(workspace());
  // Blobs recomputed on the backward pass need no copy per step.
  for (const auto& name : recompute_blobs_) scratch->shared->CreateBlob(name);
  const size_t needed = has_backward_pass_ ? static_cast<size_t>(seq_len) : 2;
  if (scratch->steps.size() < needed) scratch->steps.resize(needed);

  for (int t = 0; t < seq_len; ++t) {
    Workspace* ws = StepWorkspace(scratch, t);
    rnn::SetTimestep(ws, timestep_, t);
    try {
      rnn::RunStepNet(ws, step_net_);
    } catch (Error& e) {
      e.AppendContext(MakeString("in step net '", step_net_.name(), "' at timestep ", t));
      throw;
    }
  }
  for (const auto& alias : aliases_) {
    const Blob* src = workspace()->GetBlob(alias.src);
    DOPPIO_ENFORCE(src != nullptr && src->IsTensor(), "alias_src '", alias.src,
                   "' is not a tensor");
    const Tensor& states = src->GetTensor();
    DOPPIO_ENFORCE(states.ndim() >= 1, "alias_src '", alias.src, "' has no time dim");
    const int64_t begin = alias.offset >= 0 ? alias.offset : states.dim(0) + alias.offset;
    DOPPIO_ENFORCE(begin >= 0 && begin <= states.dim(0), "alias offset ", alias.offset,
                   " is outside '", alias.src, "' of shape ", states.dims());
    workspace()->GetBlob(alias.dst)->GetMutable<Tensor>()->ShareSlice(states, begin,
                                                                      states.dim(0) - begin);
  }
}

REGISTER_CPU_OPERATOR(RecurrentNetwork, RecurrentNetworkOp);
REGISTER_CPU_OPERATOR(rnn_internal_apply_link, RnnApplyLinkOp);
REGISTER_CPU_OPERATOR(RecurrentNetworkBlobFetcher, RecurrentNetworkBlobFetcherOp);
REGISTER_CPU_OPERATOR(rnn_internal_accumulate_gradient_input, RnnAccumulateInputGradientOp);
// On a GPU: the same host ops over the GPU's DeviceMemory (the header says
// why); recurrent_network_op_gpu.cc registers that memory.
REGISTER_CUDA_OPERATOR(RecurrentNetwork, RecurrentNetworkOp);
REGISTER_CUDA_OPERATOR(rnn_internal_apply_link, RnnApplyLinkOp);
REGISTER_CUDA_OPERATOR(rnn_internal_accumulate_gradient_input, RnnAccumulateInputGradientOp);

OPERATOR_SCHEMA(RecurrentNetwork)
    .NumInputs(1, INT_MAX)
    .NumOutputs(2, INT_MAX)
    .Apply(rnn::BlobArguments)
    .Arg("step_net", "the step net (NetDef, or its text format), run once per timestep", true)
    .Arg("backward_step_net", "the step net's backward pass; absent: forward only")
    .Arg("timestep", "(string, default 'timestep') the int32 blob holding t in each step")
    .Arg("recurrent_states", "names of the [T + L, N, D] state tensors")
    .Arg("initial_recurrent_state_ids", "per state, the input holding its initial value")
    .Arg("link_internal", "step net blobs that are views of external tensors")
    .Arg("link_external", "the tensors they view")
    .Arg("link_offset", "per link, the slice viewed at timestep t is t + offset")
    .Arg("link_window", "(default 1) per link, how many slices the view holds")
    .Arg("alias_src", "states exposed as outputs")
    .Arg("alias_dst", "the outputs exposing them")
    .Arg("alias_offset", "per alias, the first slice (negative: from the end)")
    .Arg("param", "input indices of the step net's parameters that get gradients")
    .Arg("param_grads", "the step net's names for those gradients")
    .Arg("outputs_with_grads", "outputs whose gradients the backward pass takes")
    .Arg("backward_link_internal", "links of the backward step net (as link_*)")
    .Arg("backward_link_external", "links of the backward step net (as link_*)")
    .Arg("backward_link_offset", "links of the backward step net (as link_*)")
    .Arg("recompute_blobs_on_backward", "step blobs the backward net recomputes")
    .Arg("enable_rnn_executor", "accepted for Caffe2 nets; steps run serially")
    .Input(0, "sequence", "the input sequence, [T, N, ...] float32")
    .Output(0, "outputs", "aliased states; the last output holds the step workspaces")
    .Doc(
        "Runs a step net once per timestep, Caffe2's RecurrentNetwork: links give each step "
        "views of the input sequence and of the recurrent states, which the step net reads "
        "and writes in place; aliases expose the states (every step's, or the last) as "
        "outputs. Built by caffe2.python.recurrent.recurrent_net (rnn_cell.LSTM and others).");

OPERATOR_SCHEMA(RecurrentNetworkBlobFetcher)
    .NumInputs(1)
    .NumOutputs(1)
    .Arg("prefix", "(string, default 'rnn') prefix of the copied blobs' names")
    .Input(0, "step_workspaces", "a RecurrentNetwork's last output")
    .Output(0, "blob_names", "string tensor: the names of the copies")
    .Doc(
        "Copies the tensors of every step workspace of a RecurrentNetwork into the "
        "workspace as '<prefix>_<blob><t>'.");

OPERATOR_SCHEMA(rnn_internal_apply_link)
    .NumInputs(2)
    .NumOutputs(2)
    .EnforceInplace({{1, 1}})
    .Arg("offset", "the slice at timestep t is t + offset", true)
    .Arg("window", "how many slices", true)
    .Input(0, "timestep", "int32 scalar t")
    .Input(1, "external", "the tensor viewed")
    .Output(0, "internal", "a view of external's slices [t + offset, t + offset + window)")
    .Output(1, "external", "external, in place (orders the op before its readers)")
    .Doc("Internal to RecurrentNetwork's step nets.");

OPERATOR_SCHEMA(rnn_internal_accumulate_gradient_input)
    .NumInputs(3)
    .NumOutputs(1)
    .EnforceInplace({{2, 0}})
    .Arg("offset", "the slice of g added to is t + offset", true)
    .Input(0, "timestep", "int32 scalar t")
    .Input(1, "og", "a gradient given for every timestep")
    .Input(2, "g", "the state gradient")
    .Output(0, "g", "g with og[t] added at slice t + offset")
    .Doc("Internal to RecurrentNetwork's backward step nets.");

namespace {

class GetRecurrentNetworkGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    ArgumentHelper args(Def());
    const auto with_grads = args.GetRepeated<int>("outputs_with_grads");
    DOPPIO_ENFORCE(!with_grads.empty(), "RecurrentNetwork '", Def().name(),
                   "' has no outputs_with_grads; it was built with forward_only");
    std::vector<std::string> inputs;
    for (int id : with_grads) inputs.push_back(GO(id));
    for (int i = 0; i < Def().input_size(); ++i) inputs.push_back(I(i));
    for (int i = 0; i < Def().output_size(); ++i) inputs.push_back(O(i));
    std::vector<std::string> outputs{GI(0)};
    for (int id : args.GetRepeated<int>("param")) outputs.push_back(GI(id));
    for (int id : args.GetRepeated<int>("initial_recurrent_state_ids")) outputs.push_back(GI(id));
    return SingleGradientDef("RecurrentNetworkGradient", "", inputs, outputs, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(RecurrentNetwork, GetRecurrentNetworkGradient);
NO_GRADIENT(RecurrentNetworkBlobFetcher, "it copies blobs out for inspection");
SHOULD_NOT_DO_GRADIENT(rnn_internal_apply_link,
                       "it is internal to RecurrentNetwork, whose gradient links its own");
SHOULD_NOT_DO_GRADIENT(rnn_internal_accumulate_gradient_input,
                       "it is internal to RecurrentNetwork's backward step net");

}  // namespace doppio
