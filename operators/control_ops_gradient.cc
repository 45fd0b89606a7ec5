// Gradients of the control ops (Caffe2's control_ops_grad.py, as graph
// rewrites): the gradient of Do, If and While is the same op over the
// backward pass of its subnets.
//
// - Do: a gradient Do (is_gradient_op) runs the subnet's gradient ops in the
//   forward run's workspace, popped from the stack, so locals the forward run
//   made are there; output gradients come in and input gradients go out
//   through bindings.
// - If: a gradient If over the branches' gradient nets, on the same
//   condition; a gradient only one branch makes is zero (or the incoming
//   one, passed through) in the other.
// - While: a gradient While whose body is the body's gradient (a gradient
//   Do, so iterations are undone in reverse through the workspace stack) and
//   whose condition is whether forward workspaces are left.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/backward.h"
#include "core/gradient.h"
#include "operators/control_ops.h"

namespace doppio {

namespace {

constexpr char kInnerGrad[] = "/_DO_OPERATOR_INNER_GRAD_";
constexpr char kInnerGradCopy[] = "/_DO_OPERATOR_INNER_GRAD_COPY_";

bool HasNetArg(const OperatorDef& def, const std::string& name) {
  return ArgumentHelper(def).HasSingleOfType<NetDef>(name);
}

NetDef NetArg(const OperatorDef& def, const std::string& name) {
  DOPPIO_ENFORCE(HasNetArg(def, name), "the gradient of ", def.type(), " needs its argument '",
                 name, "' as a NetDef");
  return ArgumentHelper(def).GetSingle<NetDef>(name, NetDef());
}

// A gradient subnet as argument `name` of a gradient op of `forward`. The
// ops the makers add themselves (copies, zero fills, HasScope) carry no
// device option; they run where the forward op ran, as the gradient ops the
// backward pass returns do (a CPU Copy inside a GPU net would be handed
// GPU tensors).
Argument NetArgument(const std::string& name, const NetDef& net, const OperatorDef& forward) {
  Argument arg;
  arg.set_name(name);
  *arg.mutable_n() = net;
  if (forward.has_device_option()) {
    for (OperatorDef& op : *arg.mutable_n()->mutable_op()) {
      if (!op.has_device_option()) *op.mutable_device_option() = forward.device_option();
    }
  }
  return arg;
}

OperatorDef CopyOp(const std::string& from, const std::string& to) {
  OperatorDef op;
  op.set_type("Copy");
  op.add_input(from);
  op.add_output(to);
  return op;
}

// The backward pass of a subnet from given gradients of its blobs (Caffe2's
// IR.GetBackwardPass(init_grad)), as a net of gradient ops, with the blob ->
// gradient map (the given gradients of blobs the net does not touch pass
// through) and the blobs the ops read before writing and write.
struct SubnetGradient {
  NetDef net;
  std::map<std::string, std::string> gradients;
  std::set<std::string> inputs;
  std::set<std::string> outputs;
};

SubnetGradient DifferentiateSubnet(const NetDef& subnet,
                                   const std::map<std::string, std::string>& given) {
  std::set<std::string> touched;
  for (const OperatorDef& op : subnet.op()) {
    touched.insert(op.input().begin(), op.input().end());
    touched.insert(op.output().begin(), op.output().end());
  }
  SubnetGradient result;
  result.net = subnet;
  result.net.clear_op();
  result.net.clear_external_input();
  result.net.clear_external_output();
  if (!subnet.name().empty()) result.net.set_name(subnet.name() + "_grad");
  std::vector<std::string> losses;
  std::map<std::string, GradientWrapper> loss_gradients;
  for (const auto& entry : given) {
    result.gradients[entry.first] = entry.second;
    if (!touched.count(entry.first)) continue;
    losses.push_back(entry.first);
    loss_gradients[entry.first] = GradientWrapper{entry.second, "", ""};
  }
  if (losses.empty()) return result;
  BackwardResult backward = AddGradientOperators(subnet, losses, loss_gradients);
  for (OperatorDef& op : backward.ops) {
    for (const std::string& input : op.input()) {
      if (!result.outputs.count(input)) result.inputs.insert(input);
    }
    result.outputs.insert(op.output().begin(), op.output().end());
    *result.net.add_op() = std::move(op);
  }
  for (const auto& entry : backward.gradients) {
    DOPPIO_ENFORCE(!entry.second.IsSparse(), "the gradient of '", entry.first,
                   "' inside a control-flow subnet is sparse; only dense gradients cross "
                   "If / While / Do");
    if (entry.second.IsDense()) result.gradients[entry.first] = entry.second.dense;
  }
  return result;
}

// The op's output gradients, one distinct blob per output ("" for none): a
// gradient given for two outputs is copied for the second (Do binds each
// to an inner name of its own).
std::vector<std::string> DedupedOutputGradients(const OperatorDef& def,
                                                const std::vector<std::string>& gradients,
                                                std::vector<OperatorDef>* copies) {
  std::map<std::string, std::string> by_output;
  std::set<std::string> used;
  std::vector<std::string> result;
  for (int k = 0; k < def.output_size(); ++k) {
    const std::string& output = def.output(k);
    const std::string& gradient = gradients[k];
    if (gradient.empty()) {
      result.push_back("");
    } else if (by_output.count(output)) {
      result.push_back(by_output[output]);
    } else if (used.insert(gradient).second) {
      result.push_back(by_output[output] = gradient);
    } else {
      const std::string copy = output + "_" + gradient + "_DEDUP";
      copies->push_back(CopyOp(gradient, copy));
      used.insert(copy);
      result.push_back(by_output[output] = copy);
    }
  }
  return result;
}

// The common part of the three makers: the dense output gradients.
class ControlGradientMaker : public GradientMakerBase {
 protected:
  using GradientMakerBase::GradientMakerBase;
  std::vector<std::string> OutputGradients() const {
    std::vector<std::string> gradients;
    for (int k = 0; k < Def().output_size(); ++k) gradients.push_back(HasGO(k) ? GO(k) : "");
    return gradients;
  }
  // Output -> its (deduplicated) gradient, for the outputs that have one;
  // the copies deduplication needs go to `ops`.
  std::map<std::string, std::string> GivenGradients(std::vector<OperatorDef>* ops) const {
    const std::vector<std::string> grads = DedupedOutputGradients(Def(), OutputGradients(), ops);
    std::map<std::string, std::string> given;
    for (int k = 0; k < Def().output_size(); ++k) {
      if (!grads[k].empty()) given[O(k)] = grads[k];
    }
    DOPPIO_ENFORCE(!given.empty(), "the gradient of ", Def().type(), " needs an output gradient");
    return given;
  }
  // Hands each input its gradient from `gradients` (blob -> gradient).
  void SetInputGradients(const std::map<std::string, std::string>& gradients) {
    for (int i = 0; i < Def().input_size(); ++i) {
      auto it = gradients.find(I(i));
      if (it != gradients.end()) SetDense(i, it->second);
    }
  }
};

}  // namespace

// ---- Do -------------------------------------------------------------------

namespace {

struct DoBindings {
  NetDef net;
  std::map<std::string, std::string> outer_to_inner, inner_to_outer;
  std::vector<std::string> inputs, outputs;  // outer, the stack left out
  std::string stack;
};

DoBindings ReadDo(const OperatorDef& def) {
  DoBindings d;
  d.net = NetArg(def, "net");
  DOPPIO_ENFORCE(def.input_size() > 0 && def.output_size() > 0,
                 "Do needs the workspace stack as its last input and output");
  d.stack = def.output(def.output_size() - 1);
  d.inputs.assign(def.input().begin(), def.input().end() - 1);
  d.outputs.assign(def.output().begin(), def.output().end() - 1);
  std::vector<std::string> outer = d.inputs;
  outer.insert(outer.end(), d.outputs.begin(), d.outputs.end());
  ArgumentHelper args(def);
  const auto inner = args.GetRepeated<std::string>("inner_blobs");
  const auto index = args.GetRepeated<int>("outer_blobs_idx");
  DOPPIO_ENFORCE_EQ(inner.size(), index.size(), "Do's inner_blobs and outer_blobs_idx differ");
  for (size_t k = 0; k < inner.size(); ++k) {
    DOPPIO_ENFORCE(0 <= index[k] && index[k] < static_cast<int>(outer.size()),
                   "Do's outer_blobs_idx[", k, "] is out of range");
    d.outer_to_inner[outer[index[k]]] = inner[k];
    d.inner_to_outer[inner[k]] = outer[index[k]];
  }
  return d;
}

// The gradient Do: `ops` run in the forward workspace; `bindings` (inner ->
// outer) reach the outer inputs (forward blobs and incoming gradients) and
// outputs (input gradients).
OperatorDef GradientDo(const OperatorDef& forward, const NetDef& subnet_gradient,
                       const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs,
                       const std::map<std::string, std::string>& bindings,
                       const std::set<std::string>& saved, const std::string& stack) {
  OperatorDef op;
  op.set_type("Do");
  if (!forward.name().empty()) op.set_name(forward.name() + "_grad");
  for (const std::string& input : inputs) op.add_input(input);
  op.add_input(stack);
  for (const std::string& output : outputs) op.add_output(output);
  op.add_output(stack);
  std::vector<std::string> outer = inputs;
  outer.insert(outer.end(), outputs.begin(), outputs.end());
  *op.add_arg() = NetArgument("net", subnet_gradient, forward);
  Argument inner_arg, index_arg, saved_arg;
  inner_arg.set_name("inner_blobs");
  index_arg.set_name("outer_blobs_idx");
  saved_arg.set_name("saved_fwd_blobs");
  for (const auto& binding : bindings) {
    inner_arg.add_strings(binding.first);
    index_arg.add_ints(
        static_cast<int>(std::find(outer.begin(), outer.end(), binding.second) - outer.begin()));
  }
  for (const std::string& blob : saved) saved_arg.add_strings(blob);
  *op.add_arg() = inner_arg;
  *op.add_arg() = index_arg;
  *op.add_arg() = saved_arg;
  return op;
}

class GetDoGradient final : public ControlGradientMaker {
  using ControlGradientMaker::ControlGradientMaker;
  std::vector<OperatorDef> GetGradientDefs() override {
    const DoBindings d = ReadDo(Def());
    std::vector<OperatorDef> ops;
    const std::vector<std::string> grads = DedupedOutputGradients(Def(), OutputGradients(), &ops);
    // Each outer output gradient comes in under "<inner output>/_DO_..._GRAD_".
    std::map<std::string, std::string> inner_given, incoming;  // inner blob -> inner grad
    for (size_t k = 0; k < d.outputs.size(); ++k) {
      if (grads[k].empty()) continue;
      const std::string inner = d.outer_to_inner.at(d.outputs[k]);
      inner_given[inner] = inner + kInnerGrad;
      incoming[inner + kInnerGrad] = grads[k];
    }
    DOPPIO_ENFORCE(!inner_given.empty(), "the gradient of Do needs an output gradient");
    SubnetGradient sub = DifferentiateSubnet(d.net, inner_given);
    if (sub.net.op_size() == 0) return ops;
    std::map<std::string, std::string> bindings;  // inner -> outer
    std::vector<std::string> new_inputs, new_outputs;
    std::map<std::string, std::string> input_gradients;
    for (const std::string& outer : d.inputs) {
      const std::string& inner = d.outer_to_inner.at(outer);
      auto it = sub.gradients.find(inner);
      if (it == sub.gradients.end()) continue;  // no gradient reaches this input
      // A copy gives the gradient an inner name of its own to bind outside.
      const std::string copy = inner + kInnerGradCopy;
      *sub.net.add_op() = CopyOp(it->second, copy);
      const std::string outer_gradient = GradientName(outer);
      bindings[copy] = outer_gradient;
      new_outputs.push_back(outer_gradient);
      input_gradients[outer] = outer_gradient;
    }
    std::set<std::string> written, saved;
    for (const OperatorDef& op : sub.net.op()) {
      for (const std::string& input : op.input()) {
        if (written.count(input)) continue;
        auto outer = d.inner_to_outer.find(input);
        auto given = incoming.find(input);
        const std::string* name = outer != d.inner_to_outer.end() ? &outer->second
                                  : given != incoming.end()       ? &given->second
                                                                  : nullptr;
        if (name == nullptr) {
          saved.insert(input);  // a local of the forward run, kept in its workspace
          continue;
        }
        if (std::find(new_inputs.begin(), new_inputs.end(), *name) == new_inputs.end()) {
          new_inputs.push_back(*name);
        }
        bindings[input] = *name;
      }
      written.insert(op.output().begin(), op.output().end());
    }
    ops.push_back(GradientDo(Def(), sub.net, new_inputs, new_outputs, bindings, saved, d.stack));
    SetInputGradients(input_gradients);
    return ops;
  }
};

}  // namespace

// ---- If -------------------------------------------------------------------

namespace {

// Ops making each gradient in `only_here` (made by one branch only) in the
// other branch: the incoming gradient copied when the blob had one, else
// zeros shaped like the blob.
std::vector<OperatorDef> OtherBranchGradients(const std::map<std::string, std::string>& given,
                                              const SubnetGradient& branch,
                                              const std::set<std::string>& only_here) {
  std::vector<OperatorDef> ops;
  for (const std::string& gradient : only_here) {
    std::string blob;
    for (const auto& entry : branch.gradients) {
      if (entry.second == gradient) blob = entry.first;
    }
    DOPPIO_ENFORCE(!blob.empty(), "If gradient: unknown gradient blob '", gradient, "'");
    auto incoming = given.find(blob);
    if (incoming != given.end()) {
      if (incoming->second != gradient) ops.push_back(CopyOp(incoming->second, gradient));
      continue;
    }
    OperatorDef fill;
    fill.set_type("ConstantFill");
    fill.add_input(blob);
    fill.add_output(gradient);
    Argument value;
    value.set_name("value");
    value.set_f(0.0f);
    *fill.add_arg() = value;
    ops.push_back(fill);
  }
  return ops;
}

// The gradients a branch writes that the other does not.
std::set<std::string> OnlyIn(const SubnetGradient& branch, const SubnetGradient* other) {
  std::set<std::string> result;
  for (const auto& entry : branch.gradients) {
    const std::string& gradient = entry.second;
    if (branch.outputs.count(gradient) && !(other && other->outputs.count(gradient))) {
      result.insert(gradient);
    }
  }
  return result;
}

// One blob -> gradient map from both branches: where they differ, one of
// them only passed the incoming gradient through, and the other's wins.
std::map<std::string, std::string> MergedGradients(const std::map<std::string, std::string>& given,
                                                   const SubnetGradient& then_branch,
                                                   const SubnetGradient* else_branch) {
  std::map<std::string, std::string> merged = then_branch.gradients;
  if (else_branch == nullptr) return merged;
  for (const auto& entry : else_branch->gradients) {
    auto then_it = merged.find(entry.first);
    if (then_it == merged.end() || then_it->second == entry.second) {
      merged[entry.first] = entry.second;
      continue;
    }
    auto incoming = given.find(entry.first);
    const std::string passed = incoming == given.end() ? "" : incoming->second;
    DOPPIO_ENFORCE(then_it->second == passed || entry.second == passed,
                   "If gradient: the branches name the gradient of '", entry.first,
                   "' differently ('", then_it->second, "', '", entry.second, "')");
    if (then_it->second == passed) then_it->second = entry.second;
  }
  return merged;
}

class GetIfGradient final : public ControlGradientMaker {
  using ControlGradientMaker::ControlGradientMaker;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<OperatorDef> ops;
    const std::map<std::string, std::string> given = GivenGradients(&ops);
    SubnetGradient then_branch = DifferentiateSubnet(NetArg(Def(), "then_net"), given);
    const bool has_else = HasNetArg(Def(), "else_net");
    SubnetGradient else_branch;
    if (has_else) else_branch = DifferentiateSubnet(NetArg(Def(), "else_net"), given);
    const SubnetGradient* other = has_else ? &else_branch : nullptr;
    const std::map<std::string, std::string> merged = MergedGradients(given, then_branch, other);
    // What one branch computes, the other must set too.
    std::vector<OperatorDef> then_only =
        OtherBranchGradients(given, then_branch, OnlyIn(then_branch, other));
    std::vector<OperatorDef> else_only =
        has_else ? OtherBranchGradients(given, else_branch, OnlyIn(else_branch, &then_branch))
                 : std::vector<OperatorDef>{};
    NetDef else_net;
    if (has_else) {
      else_net = else_branch.net;
    } else if (!then_only.empty()) {
      else_net = then_branch.net;
      else_net.clear_op();
      else_net.set_name(else_net.name() + "_auto_else_zero_blobs_");
    }
    for (OperatorDef& op : then_only) *else_net.add_op() = std::move(op);
    for (OperatorDef& op : else_only) *then_branch.net.add_op() = std::move(op);

    OperatorDef op;
    op.set_type("If");
    if (!Def().name().empty()) op.set_name(Def().name() + "_grad");
    op.add_input(I(0));
    std::set<std::string> inputs = then_branch.inputs, outputs = then_branch.outputs;
    inputs.insert(else_branch.inputs.begin(), else_branch.inputs.end());
    outputs.insert(else_branch.outputs.begin(), else_branch.outputs.end());
    for (const std::string& input : inputs) {
      if (input != I(0)) op.add_input(input);
    }
    for (const std::string& output : outputs) op.add_output(output);
    *op.add_arg() = NetArgument("then_net", then_branch.net, Def());
    if (has_else || else_net.op_size() > 0)
      *op.add_arg() = NetArgument("else_net", else_net, Def());
    ops.push_back(op);
    SetInputGradients(merged);
    return ops;
  }
};

}  // namespace

// ---- While ----------------------------------------------------------------

namespace {

class GetWhileGradient final : public ControlGradientMaker {
  using ControlGradientMaker::ControlGradientMaker;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<OperatorDef> ops;
    const std::map<std::string, std::string> given = GivenGradients(&ops);
    const NetDef loop_net = NetArg(Def(), "loop_net");
    DOPPIO_ENFORCE(loop_net.op_size() == 1 && loop_net.op(0).type() == "Do",
                   "the gradient of While needs a loop body of one Do op (as "
                   "control_ops_util.add_while_op makes)");
    const OperatorDef& body = loop_net.op(0);
    DOPPIO_ENFORCE(!ArgumentHelper(body).GetSingle<bool>("reuse_workspace", false),
                   "the gradient of While needs a Do body without reuse_workspace");
    const std::string stack = body.output(body.output_size() - 1);
    SubnetGradient loop = DifferentiateSubnet(loop_net, given);
    DOPPIO_ENFORCE(loop.net.op_size() > 0, "the While loop body has no gradient");

    // Before each backward iteration: whether forward iterations are left,
    // and the body's input gradients become the next iteration's incoming
    // output gradients (and, before the first, the other way round).
    const std::string cond = stack + "/gradient_loop_cond";
    NetDef cond_net;
    cond_net.set_name("gradient_loop_cond_net");
    OperatorDef has_scope;
    has_scope.set_type("HasScope");
    has_scope.add_input(stack);
    has_scope.add_output(cond);
    ops.push_back(has_scope);
    *cond_net.add_op() = has_scope;
    for (const auto& entry : given) {
      auto it = loop.gradients.find(entry.first);
      if (it == loop.gradients.end() || it->second == entry.second) continue;
      *cond_net.add_op() = CopyOp(it->second, entry.second);
      ops.push_back(CopyOp(entry.second, it->second));
    }
    OperatorDef op;
    op.set_type("While");
    if (!Def().name().empty()) op.set_name(Def().name() + "_grad");
    op.add_input(cond);
    for (const std::string& input : loop.inputs) op.add_input(input);
    for (const std::string& output : loop.outputs) op.add_output(output);
    *op.add_arg() = NetArgument("loop_net", loop.net, Def());
    *op.add_arg() = NetArgument("cond_net", cond_net, Def());
    ops.push_back(op);
    SetInputGradients(loop.gradients);
    return ops;
  }
};

}  // namespace

REGISTER_GRADIENT(Do, GetDoGradient);
REGISTER_GRADIENT(If, GetIfGradient);
REGISTER_GRADIENT(While, GetWhileGradient);

}  // namespace doppio
