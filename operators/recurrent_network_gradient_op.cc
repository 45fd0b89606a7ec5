// RecurrentNetworkGradient: see recurrent_network_op.h. The backward step
// net (the step net's gradient ops, from recurrent.recurrent_net) gets, in
// front, links that view the state gradients and ops adding the gradients of
// the every-step outputs, and, behind, a Sum per parameter that accumulates
// each step's parameter gradient into the op's output.
#include <climits>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/recurrent_network_op.h"

namespace doppio {

namespace {

Tensor* TensorIn(Workspace* ws, const std::string& name) {
  Blob* blob = ws->GetBlob(name);
  DOPPIO_ENFORCE(blob != nullptr, "blob '", name, "' does not exist");
  return blob->GetMutable<Tensor>();  // on whatever device it is
}

}  // namespace

RecurrentNetworkGradientOp::RecurrentNetworkGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      memory_(rnn::MakeDeviceMemory(def)),
      step_net_(rnn::ReadStepNet(*this, "backward_step_net")),
      timestep_(GetSingleArgument<std::string>("timestep", "timestep")),
      outputs_with_grads_(GetRepeatedArgument<int>("outputs_with_grads")),
      initial_state_ids_(GetRepeatedArgument<int>("initial_recurrent_state_ids")) {
  DOPPIO_ENFORCE(!outputs_with_grads_.empty(), "argument 'outputs_with_grads' is empty");
  DOPPIO_ENFORCE(InputSize() > static_cast<int>(outputs_with_grads_.size()) + 1,
                 "inputs must be the output gradients, then the forward op's inputs and outputs");
  links_ = rnn::ReadLinks(*this, "link_internal", "link_external", "link_offset", "link_window");
  for (const auto& link : rnn::ReadLinks(*this, "backward_link_internal", "backward_link_external",
                                         "backward_link_offset", "")) {
    links_.push_back(link);
  }
  for (auto& link : links_) {
    link.internal = rnn::Renamed(*this, link.internal);
    link.external = rnn::Renamed(*this, link.external);
  }
  ReadParams();
  ReadStateGradients();
  DOPPIO_ENFORCE_EQ(OutputSize(), static_cast<int>(1 + params_.size() + state_grads_.size()),
                    "outputs must be the gradients of the sequence, the params and the "
                    "initial states");
  step_net_.add_external_input(timestep_);
  AddInputGradientAccumulation();
  rnn::AddApplyLinkOps(links_, timestep_, def.device_option(), &step_net_);
  AddParamGradientAccumulation();
  step_net_.set_type("simple");
  // Both step nets live in each step's workspace: their names must differ.
  step_net_.set_name(step_net_.name() + "/backward_step");
}

void RecurrentNetworkGradientOp::ReadParams() {
  const auto param = GetRepeatedArgument<int>("param");
  const auto param_grads = GetRepeatedArgument<std::string>("param_grads");
  DOPPIO_ENFORCE(param_grads.empty() || param_grads.size() == param.size(),
                 "'param' and 'param_grads' must pair up");
  const int first_input = static_cast<int>(outputs_with_grads_.size());
  for (size_t i = 0; i < param.size(); ++i) {
    DOPPIO_ENFORCE(param[i] >= 0 && first_input + param[i] < InputSize(), "param[", i,
                   "] = ", param[i], " is not an input of the forward op");
    Param p;
    p.input = first_input + param[i];
    p.output = 1 + static_cast<int>(i);
    p.grad = output_name(p.output);
    // The backward step net writes each step's gradient under the name it
    // knows; that goes to a scratch blob the Sum below accumulates.
    const std::string step_grad =
        param_grads.empty() ? p.grad : rnn::Renamed(*this, param_grads[i]);
    p.cell_gradient = step_grad + "_tmpstep";
    for (OperatorDef& op : *step_net_.mutable_op()) {
      RenameOpBlobs(
          &op, [&](const std::string& blob) { return blob == step_grad ? p.cell_gradient : blob; });
    }
    params_.push_back(p);
  }
}

void RecurrentNetworkGradientOp::ReadStateGradients() {
  const auto states = GetRepeatedArgument<std::string>("recurrent_states");
  const auto alias_src = GetRepeatedArgument<std::string>("alias_src");
  const auto alias_offset = GetRepeatedArgument<int>("alias_offset");
  DOPPIO_ENFORCE_EQ(alias_src.size(), alias_offset.size(),
                    "'alias_src' and 'alias_offset' must pair up");
  DOPPIO_ENFORCE_EQ(states.size(), initial_state_ids_.size(),
                    "'recurrent_states' and 'initial_recurrent_state_ids' must pair up");
  for (const auto& state : states) {
    StateGradient sg;
    sg.state = state;
    sg.grad = rnn::Renamed(*this, state + "_grad");
    for (size_t j = 0; j < alias_src.size(); ++j) {
      if (alias_src[j] != state) continue;
      for (size_t k = 0; k < outputs_with_grads_.size(); ++k) {
        if (outputs_with_grads_[k] != static_cast<int>(j)) continue;
        DOPPIO_ENFORCE(alias_offset[j] == 1 || alias_offset[j] == -1, "output ", j, " aliases '",
                       state, "' at offset ", alias_offset[j],
                       "; only offsets 1 (every step) and -1 (last) take gradients");
        (alias_offset[j] == 1 ? sg.all_grad : sg.last_grad) = input_name(static_cast<int>(k));
      }
    }
    state_grads_.push_back(sg);
  }
}

void RecurrentNetworkGradientOp::AddInputGradientAccumulation() {
  std::vector<OperatorDef> ops;
  for (const auto& sg : state_grads_) {
    if (sg.all_grad.empty()) continue;
    OperatorDef op;
    op.set_type("rnn_internal_accumulate_gradient_input");
    op.add_input(timestep_);
    op.add_input(sg.all_grad);
    op.add_input(sg.grad);
    op.add_output(sg.grad);
    *op.mutable_device_option() = def().device_option();
    SetArgument(&op, "offset", 1);
    ops.push_back(op);
    step_net_.add_external_input(sg.all_grad);
    step_net_.add_external_input(sg.grad);
  }
  rnn::PrependOps(std::move(ops), &step_net_);
}

void RecurrentNetworkGradientOp::AddParamGradientAccumulation() {
  for (const auto& p : params_) {
    OperatorDef* op = step_net_.add_op();
    op->set_type("Sum");
    op->add_input(p.grad);
    op->add_input(p.cell_gradient);
    op->add_output(p.grad);
    *op->mutable_device_option() = def().device_option();
    step_net_.add_external_input(p.grad);
  }
}

Tensor* RecurrentNetworkGradientOp::OutputOnDevice(int index) {
  return OutputBlob(index)->GetMutableTensor(memory_->device());
}

void RecurrentNetworkGradientOp::PrepareGradients(int64_t batch) {
  for (const auto& p : params_) {
    Tensor* grad = OutputOnDevice(p.output);
    grad->ResizeLike(rnn::InputOnDevice(*this, p.input, *memory_));
    memory_->Zero(grad->mutable_data<float>(), grad->numel());
  }
  for (const auto& sg : state_grads_) {
    const Tensor& state = *TensorIn(workspace(), sg.state);
    DOPPIO_ENFORCE(state.ndim() == 3 && state.dim(1) == batch, "state '", sg.state, "' is ",
                   state.DebugString(), "; run the forward op first");
    Tensor* grad = workspace()->CreateBlob(sg.grad)->GetMutableTensor(state.device());
    grad->ResizeLike(state);
    memory_->Zero(grad->mutable_data<float>(), grad->numel());
    if (sg.last_grad.empty()) continue;
    const Tensor& last = *TensorIn(workspace(), sg.last_grad);
    const int64_t slice = state.numel() / state.dim(0);
    DOPPIO_ENFORCE(last.dtype() == DataType::kFloat && last.numel() == slice, "gradient '",
                   sg.last_grad, "' ", last.DebugString(), " does not match one step of '",
                   sg.state, "' ", state.dims());
    DOPPIO_ENFORCE(last.device() == state.device(), "gradient '", sg.last_grad, "' ",
                   last.DebugString(), " is not on the device of '", sg.state, "'");
    memory_->AddInto(last.data<float>(), grad->mutable_data<float>() + (state.dim(0) - 1) * slice,
                     slice);
  }
}

void RecurrentNetworkGradientOp::WriteInitialStateGradients(int64_t batch) {
  const int first_input = static_cast<int>(outputs_with_grads_.size());
  for (size_t i = 0; i < state_grads_.size(); ++i) {
    const Tensor& init = Input(first_input + initial_state_ids_[i]);
    const Tensor& grad = *TensorIn(workspace(), state_grads_[i].grad);
    Tensor* out = OutputOnDevice(1 + static_cast<int>(params_.size() + i));
    if (init.ndim() >= 2) {
      // The first L slices of the state gradient are the initial state's.
      out->ShareSlice(grad, 0, init.ndim() == 3 ? init.dim(0) : 1);
      out->Reshape(init.dims());
      continue;
    }
    // A [D] initial state was repeated over the batch: its gradient sums.
    const int64_t depth = init.dim(0);
    out->Resize({depth});
    float* to = out->mutable_data<float>();
    const float* from = grad.data<float>();
    memory_->Zero(to, depth);
    for (int64_t n = 0; n < batch; ++n) memory_->AddInto(from + n * depth, to, depth);
  }
}

void RecurrentNetworkGradientOp::RunOnDevice() {
  const int first_input = static_cast<int>(outputs_with_grads_.size());
  const Tensor& sequence = rnn::InputOnDevice(*this, first_input, *memory_);
  DOPPIO_ENFORCE(sequence.ndim() >= 2, "input sequence '", input_name(first_input),
                 "' must be [T, N, ...]");
  const int64_t seq_len = sequence.dim(0);
  const int64_t batch = sequence.dim(1);
  DOPPIO_ENFORCE(InputBlob(InputSize() - 1).IsType<rnn::StepWorkspaces>(), "'",
                 input_name(InputSize() - 1),
                 "' holds no step workspaces: the forward "
                 "RecurrentNetwork must run (with a backward_step_net) before its gradient");
  const auto& scratch = InputAs<rnn::StepWorkspaces>(InputSize() - 1);
  DOPPIO_ENFORCE(scratch.steps.size() >= static_cast<size_t>(seq_len) && scratch.shared,
                 "the forward RecurrentNetwork kept ", scratch.steps.size(),
                 " step workspaces for ", seq_len,
                 " timesteps; it must run (with a backward_step_net) before its gradient");
  PrepareGradients(batch);
  // The sequence's gradient, which backward links view step by step.
  const std::string sequence_grad = rnn::Renamed(*this, input_name(first_input) + "_grad");
  Tensor* seq_grad = workspace()->CreateBlob(sequence_grad)->GetMutableTensor(sequence.device());
  seq_grad->ResizeLike(sequence);
  memory_->Zero(seq_grad->mutable_data<float>(), seq_grad->numel());

  // Blobs the backward ops write that the forward steps do not hold can be
  // one copy shared by every timestep.
  for (const auto& op : step_net_.op()) {
    for (const auto& name : op.output()) {
      if (!scratch.steps[0]->HasBlob(name)) scratch.shared->CreateBlob(name);
    }
  }
  for (int64_t t = seq_len - 1; t >= 0; --t) {
    Workspace* ws = scratch.steps[t].get();
    DOPPIO_ENFORCE(ws != nullptr, "no step workspace for timestep ", t);
    rnn::SetTimestep(ws, timestep_, static_cast<int>(t));
    try {
      rnn::RunStepNet(ws, step_net_);
    } catch (Error& e) {
      e.AppendContext(MakeString("in backward step net '", step_net_.name(), "' at timestep ", t));
      throw;
    }
  }
  if (OutputBlob(0) != workspace()->GetBlob(sequence_grad)) OutputOnDevice(0)->ShareData(*seq_grad);
  WriteInitialStateGradients(batch);
}

REGISTER_CPU_OPERATOR(RecurrentNetworkGradient, RecurrentNetworkGradientOp);
REGISTER_CUDA_OPERATOR(RecurrentNetworkGradient, RecurrentNetworkGradientOp);

OPERATOR_SCHEMA(RecurrentNetworkGradient)
    .NumInputs(3, INT_MAX)
    .NumOutputs(1, INT_MAX)
    .Apply(rnn::BlobArguments)
    .Input(0, "output_grads",
           "gradients of the outputs in outputs_with_grads, then every "
           "input and output of the forward op (the step workspaces last)")
    .Output(0, "sequence_grad",
            "gradient of the input sequence, then of the params in "
            "'param', then of the initial states")
    .Doc(
        "Gradient of RecurrentNetwork: runs the backward step net from the last timestep "
        "to the first in the workspaces the forward op kept. Takes the forward op's "
        "arguments.");

SHOULD_NOT_DO_GRADIENT(RecurrentNetworkGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
