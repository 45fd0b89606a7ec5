// Caffe2's control-flow ops: If and While run nets held in their arguments;
// CreateScope, HasScope and Do give a net a workspace of its own whose only
// outer blobs are the ones bound to it (Caffe2's "lexical scopes", what
// brew.cond / brew.loop and NetBuilder(_use_control_ops=True) emit).
//
// Ownership: If and While own the nets they build from their arguments, made
// in the op's workspace at construction. A Do op's workspaces live in a
// WorkspaceStack held by a blob of the outer workspace (made by CreateScope);
// they outlive the op's run so that the gradient Do can reuse the forward
// values. Thread-safety: a WorkspaceStack is used by the ops of one net run at
// a time (the executor orders them through the stack blob).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/operator.h"
#include "core/workspace.h"

namespace doppio {

// The workspaces a Do op ran its net in, innermost last. A forward Do pushes
// one (reusing a workspace left from an earlier run when there is one); the
// gradient Do pops the forward workspace of the matching forward run, so a
// While loop's gradient walks its iterations backwards.
class WorkspaceStack {
 public:
  using Bindings = std::map<std::string, std::string>;

  // The next workspace above the top, bound to `parent`'s blobs.
  std::shared_ptr<Workspace> PushForward(Workspace* parent, const Bindings& bindings);
  // The top workspace again, with `bindings` added; null when empty.
  std::shared_ptr<Workspace> ReuseLastForward(Workspace* parent, const Bindings& bindings);
  // The top workspace, with the gradient's bindings added (names the forward
  // run defined locally keep their saved values); null when empty.
  std::shared_ptr<Workspace> PopGradient(Workspace* parent, const Bindings& bindings);
  // Empties the stack; the workspaces stay for reuse.
  void Clear() { top_ = -1; }
  bool empty() const { return top_ < 0; }

 private:
  int top_ = -1;
  std::vector<std::shared_ptr<Workspace>> workspaces_;
};

// Output: a blob holding an empty WorkspaceStack (an existing stack is
// emptied).
class CreateScopeOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  void Run() override;
};

// Input: a WorkspaceStack; output: a bool scalar, whether it holds any
// workspace.
class HasScopeOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  void Run() override;
};

// Runs the NetDef argument `net` in a workspace of its own. Inputs and
// outputs: the outer blobs the net sees, then (last of both, the same blob)
// the WorkspaceStack. `inner_blobs[k]` is the name under which the net sees
// outer blob `outer_blobs_idx[k]` (an index into the inputs then outputs,
// the stack left out); every outer blob must be bound. Arguments:
// reuse_workspace (run in the last forward workspace again),
// copy_external_blobs (after the run, keep copies of the bound blobs'
// values in the workspace, for a loop's gradient).
class DoOp final : public OperatorBase {
 public:
  DoOp(const OperatorDef& def, Workspace* workspace);
  void Run() override;

 private:
  WorkspaceStack* Stack();

  NetDef net_def_;
  WorkspaceStack::Bindings bindings_;
  std::set<std::string> inner_names_;
  bool is_gradient_;
  bool copy_external_blobs_;
  bool reuse_workspace_;
};

// The NetDef in argument `name` (a NetDef, or its text format) built in
// `op`'s workspace; null when the argument is absent and not `required`.
std::unique_ptr<NetBase> MakeArgumentNet(const OperatorBase& op, const std::string& name,
                                         bool required);

// Input `index` of `op` as a bool: a one-element bool tensor, on the host or
// read from the device through `context`.
template <class Context>
bool ReadCondition(const OperatorBase& op, int index, Context& context) {
  const Blob& blob = op.InputBlob(index);
  DOPPIO_ENFORCE(blob.IsTensor(), "the condition '", op.input_name(index),
                 "' must be a tensor, not ", blob.TypeName());
  const Tensor& condition = blob.GetTensor();
  DOPPIO_ENFORCE(condition.dtype() == DataType::kBool && condition.numel() == 1, "the condition '",
                 op.input_name(index), "' must be one bool, not ", condition.DebugString());
  if (condition.device().kind == DeviceKind::kCPU) return *condition.data<bool>();
  bool value = false;
  context.CopyBytes(sizeof(bool), condition.data<bool>(), &value);
  context.FinishDeviceComputation();
  return value;
}

// Input 0: a bool scalar; runs `then_net` when it is true, else `else_net`
// (if given). The nets run in the op's workspace. The other inputs and the
// outputs only tell executors what the nets read and write.
template <class Context>
class IfOp final : public Operator<Context> {
 public:
  IfOp(const OperatorDef& def, Workspace* workspace)
      : Operator<Context>(def, workspace),
        then_net_(MakeArgumentNet(*this, "then_net", true)),
        else_net_(MakeArgumentNet(*this, "else_net", false)) {}
  void RunOnDevice() override {
    if (ReadCondition(*this, 0, this->context_)) {
      then_net_->Run();
    } else if (else_net_) {
      else_net_->Run();
    }
  }
  // The condition is read on the host, and the nets run their own ops.
  bool NeedsHostSync() const override { return true; }

 private:
  std::unique_ptr<NetBase> then_net_;
  std::unique_ptr<NetBase> else_net_;
};

// Input 0: a bool scalar. Runs `cond_net` (if given); then, while input 0 is
// true, `loop_net` and `cond_net` again. The nets run in the op's workspace.
template <class Context>
class WhileOp final : public Operator<Context> {
 public:
  WhileOp(const OperatorDef& def, Workspace* workspace)
      : Operator<Context>(def, workspace),
        loop_net_(MakeArgumentNet(*this, "loop_net", true)),
        cond_net_(MakeArgumentNet(*this, "cond_net", false)) {}
  void RunOnDevice() override {
    while (true) {
      if (cond_net_) cond_net_->Run();
      if (!ReadCondition(*this, 0, this->context_)) return;
      loop_net_->Run();
    }
  }
  bool NeedsHostSync() const override { return true; }

 private:
  std::unique_ptr<NetBase> loop_net_;
  std::unique_ptr<NetBase> cond_net_;
};

}  // namespace doppio
