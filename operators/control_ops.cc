#include "operators/control_ops.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/recurrent_network_op.h"

namespace doppio {

std::unique_ptr<NetBase> MakeArgumentNet(const OperatorBase& op, const std::string& name,
                                         bool required) {
  if (!ArgumentHelper(op.def()).Has(name)) {
    DOPPIO_ENFORCE(!required, "argument '", name, "' (a NetDef) is missing");
    return nullptr;
  }
  const NetDef net = rnn::ReadStepNet(op, name);  // a NetDef or its text format
  try {
    return CreateNet(net, op.workspace());
  } catch (Error& error) {
    error.AppendContext("while building the net '" + net.name() + "' of argument '" + name + "'");
    throw;
  }
}

// ---- WorkspaceStack ------------------------------------------------------

std::shared_ptr<Workspace> WorkspaceStack::PushForward(Workspace* parent,
                                                       const Bindings& bindings) {
  if (top_ + 1 == static_cast<int>(workspaces_.size())) {
    workspaces_.push_back(std::make_shared<Workspace>(parent, bindings));
    return workspaces_[++top_];
  }
  // A workspace of an earlier run: its local copies of bound blobs (left by
  // copy_external_blobs) give way to the bindings again.
  Workspace& reused = *workspaces_[top_ + 1];
  bool had_copy = false;
  for (const auto& binding : bindings) had_copy |= reused.RemoveBlob(binding.first);
  if (had_copy) reused.AddBlobMapping(parent, bindings, /*skip_defined=*/false);
  return workspaces_[++top_];
}

std::shared_ptr<Workspace> WorkspaceStack::ReuseLastForward(Workspace* parent,
                                                            const Bindings& bindings) {
  if (top_ < 0) return nullptr;
  workspaces_[top_]->AddBlobMapping(parent, bindings, /*skip_defined=*/false);
  return workspaces_[top_];
}

std::shared_ptr<Workspace> WorkspaceStack::PopGradient(Workspace* parent,
                                                       const Bindings& bindings) {
  if (top_ < 0) return nullptr;
  std::shared_ptr<Workspace> workspace = workspaces_[top_--];
  workspace->AddBlobMapping(parent, bindings, /*skip_defined=*/true);
  return workspace;
}

// ---- CreateScope, HasScope -----------------------------------------------

namespace {

// The stack in `blob`: an empty blob gets one; any other content is an error
// (Do would otherwise throw away, say, a tensor of that name).
WorkspaceStack* StackIn(Blob* blob, const std::string& name) {
  DOPPIO_ENFORCE(blob->IsEmpty() || blob->IsType<WorkspaceStack>(), "the blob '", name, "' holds ",
                 blob->TypeName(), ", not a workspace stack (make it with CreateScope)");
  return blob->GetMutable<WorkspaceStack>();
}

}  // namespace

void CreateScopeOp::Run() { StackIn(OutputBlob(0), output_name(0))->Clear(); }

void HasScopeOp::Run() {
  const Blob& blob = InputBlob(0);
  DOPPIO_ENFORCE(blob.IsType<WorkspaceStack>(), "the blob '", input_name(0), "' holds ",
                 blob.TypeName(), ", not a workspace stack (make it with CreateScope)");
  Tensor* output = OutputBlob(0)->GetMutableTensor();
  output->Resize({});
  *output->mutable_data<bool>() = !blob.Get<WorkspaceStack>().empty();
}

// ---- Do ------------------------------------------------------------------

namespace {

// The op's outer blob names: inputs then outputs, the trailing workspace
// stack (the same blob on both sides) left out.
std::vector<std::string> OuterNames(const OperatorDef& def) {
  DOPPIO_ENFORCE(def.input_size() > 0 && def.output_size() > 0,
                 "Do needs the workspace stack as its last input and last output");
  const std::string& stack = def.input(def.input_size() - 1);
  DOPPIO_ENFORCE(def.output(def.output_size() - 1) == stack, "the last input ('", stack,
                 "') and the last output ('", def.output(def.output_size() - 1),
                 "') must be the same workspace stack blob");
  std::vector<std::string> names(def.input().begin(), def.input().end() - 1);
  const std::set<std::string> inputs(names.begin(), names.end());
  DOPPIO_ENFORCE(inputs.size() == names.size(), "Do has a repeated input blob");
  names.insert(names.end(), def.output().begin(), def.output().end() - 1);
  DOPPIO_ENFORCE(std::set<std::string>(names.begin() + inputs.size(), names.end()).size() ==
                     names.size() - inputs.size(),
                 "Do has a repeated output blob");
  return names;
}

// inner name -> outer name from inner_blobs / outer_blobs_idx, which must
// bind every outer blob (an outer blob may have several inner names).
WorkspaceStack::Bindings ReadBindings(const OperatorBase& op) {
  const auto inner = op.GetRepeatedArgument<std::string>("inner_blobs");
  const auto index = op.GetRepeatedArgument<int>("outer_blobs_idx");
  DOPPIO_ENFORCE_EQ(inner.size(), index.size(),
                    "'inner_blobs' and 'outer_blobs_idx' must have one entry per binding");
  const std::vector<std::string> outer = OuterNames(op.def());
  WorkspaceStack::Bindings bindings;
  std::set<std::string> used;
  for (size_t k = 0; k < inner.size(); ++k) {
    DOPPIO_ENFORCE(0 <= index[k] && index[k] < static_cast<int>(outer.size()), "outer_blobs_idx[",
                   k, "] = ", index[k], " (inner blob '", inner[k], "') is not an index into the ",
                   outer.size(), " outer blobs");
    DOPPIO_ENFORCE(bindings.emplace(inner[k], outer[index[k]]).second, "the inner blob '", inner[k],
                   "' is bound twice");
    // One outer blob may appear under two inner names (a gradient Do reads
    // an incoming gradient and writes the outgoing one to the same blob).
    used.insert(outer[index[k]]);
  }
  DOPPIO_ENFORCE(used.size() == std::set<std::string>(outer.begin(), outer.end()).size(),
                 "every input and output of Do (but the workspace stack) must be bound to an "
                 "inner blob");
  return bindings;
}

}  // namespace

DoOp::DoOp(const OperatorDef& def, Workspace* workspace)
    : OperatorBase(def, workspace),
      bindings_(ReadBindings(*this)),
      is_gradient_(def.is_gradient_op()),
      copy_external_blobs_(GetSingleArgument<bool>("copy_external_blobs", false)),
      reuse_workspace_(GetSingleArgument<bool>("reuse_workspace", false)) {
  ArgumentHelper args(def);
  DOPPIO_ENFORCE(args.HasSingleOfType<NetDef>("net"), "argument 'net' (a NetDef) is missing");
  net_def_ = args.GetSingle<NetDef>("net", NetDef());
  DOPPIO_ENFORCE(!(is_gradient_ && reuse_workspace_),
                 "a gradient Do runs in the forward workspaces: reuse_workspace is not allowed");
  DOPPIO_ENFORCE(!(copy_external_blobs_ && reuse_workspace_),
                 "reuse_workspace and copy_external_blobs cannot both be set");
  for (const auto& binding : bindings_) inner_names_.insert(binding.first);
}

WorkspaceStack* DoOp::Stack() {
  return StackIn(OutputBlob(OutputSize() - 1), output_name(OutputSize() - 1));
}

namespace {

// A copy of `source` on its own device: a host tensor directly, a device
// one through that device's Copy op.
void CopyOnItsDevice(const Tensor& source, Tensor* destination) {
  if (source.device().kind == DeviceKind::kCPU) {
    destination->CopyFrom(source);
    return;
  }
  Workspace scratch;
  scratch.CreateBlob("source")->GetMutable<Tensor>()->ShareData(source);
  OperatorDef copy;
  copy.set_type("Copy");
  copy.add_input("source");
  copy.add_output("copy");
  copy.mutable_device_option()->set_device_type(static_cast<int>(source.device().kind));
  copy.mutable_device_option()->set_cuda_gpu_id(source.device().id);
  CreateOperator(copy, &scratch)->Run();
  destination->ShareData(scratch.GetBlob("copy")->GetTensor());
}

}  // namespace

void DoOp::Run() {
  WorkspaceStack* stack = Stack();
  std::shared_ptr<Workspace> scope;
  if (is_gradient_) {
    scope = stack->PopGradient(workspace(), bindings_);
    DOPPIO_ENFORCE(scope != nullptr, "the gradient Do found no forward workspace left in '",
                   output_name(OutputSize() - 1), "'");
  } else if (reuse_workspace_ && !stack->empty()) {
    scope = stack->ReuseLastForward(workspace(), bindings_);
  } else {
    scope = stack->PushForward(workspace(), bindings_);
  }
  NetBase* net = scope->GetNet(net_def_.name());
  if (net == nullptr) net = scope->CreateNet(net_def_, /*overwrite=*/true);
  net->Run();
  if (!is_gradient_ && copy_external_blobs_)
    scope->CopyForwardedTensors(inner_names_, CopyOnItsDevice);
}

// ---- registration, schemas, gradients ------------------------------------

REGISTER_CPU_OPERATOR(CreateScope, CreateScopeOp);
REGISTER_CPU_OPERATOR(HasScope, HasScopeOp);
REGISTER_CPU_OPERATOR(Do, DoOp);
REGISTER_CPU_OPERATOR(If, IfOp<CPUContext>);
REGISTER_CPU_OPERATOR(While, WhileOp<CPUContext>);

OPERATOR_SCHEMA(CreateScope)
    .NumInputs(0)
    .NumOutputs(1)
    .Output(0, "scope", "an empty workspace stack, for Do ops")
    .Doc("Makes (or empties) the workspace stack that Do ops run their nets in.");

OPERATOR_SCHEMA(HasScope)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "scope", "a workspace stack (CreateScope)")
    .Output(0, "has_scope", "bool scalar: whether the stack holds a workspace")
    .Doc("Whether a workspace stack is non-empty (a While gradient's loop condition).");

OPERATOR_SCHEMA(Do)
    .NumInputs(1, INT_MAX)
    .NumOutputs(1, INT_MAX)
    .Arg("net", "NetDef: the net to run")
    .Arg("inner_blobs", "strings: the names under which the net sees the outer blobs")
    .Arg("outer_blobs_idx", "ints: for each inner blob, its outer blob (inputs, then outputs)")
    .Arg("reuse_workspace", "bool: run in the last forward workspace again (default false)")
    .Arg("copy_external_blobs", "bool: keep copies of the bound blobs' values (default false)")
    .AllowAnyInplace()
    .BlobNameArgs({"inner_blobs"})
    .NetArgs({"net"})
    .Doc(
        "Runs `net` in a workspace of its own that sees only the bound outer blobs; the last "
        "input and output is the workspace stack (CreateScope).");

OPERATOR_SCHEMA(If)
    .NumInputs(1, INT_MAX)
    .NumOutputs(0, INT_MAX)
    .Input(0, "condition", "bool scalar")
    .Arg("then_net", "NetDef run when the condition is true")
    .Arg("else_net", "NetDef run when it is false (optional)")
    .NetArgs({"then_net", "else_net"})
    .AllowAnyInplace()
    .Doc(
        "Runs then_net or else_net in the op's workspace; the other inputs and the outputs "
        "declare what they read and write.");

OPERATOR_SCHEMA(While)
    .NumInputs(1, INT_MAX)
    .NumOutputs(0, INT_MAX)
    .Input(0, "condition", "bool scalar, read before each iteration")
    .Arg("loop_net", "NetDef: the loop body")
    .Arg("cond_net", "NetDef run before each check of the condition (optional)")
    .NetArgs({"loop_net", "cond_net"})
    .AllowAnyInplace()
    .Doc(
        "Runs cond_net (if given), and while the condition is true, loop_net and cond_net "
        "again, in the op's workspace.");

SHOULD_NOT_DO_GRADIENT(CreateScope, "it makes a workspace stack, not a value");
SHOULD_NOT_DO_GRADIENT(HasScope, "its output is a bool");
// Do, If and While: gradients in control_ops_gradient.cc.

}  // namespace doppio
