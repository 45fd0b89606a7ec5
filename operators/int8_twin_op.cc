#include "operators/int8_twin_op.h"

#include <set>
#include <string>

#include "core/registry.h"

namespace doppio {

TwinOp::TwinOp(const std::string& type, const OperatorDef& int8_def, int num_inputs,
               int num_outputs, const std::vector<Argument>& extra_args,
               const std::set<std::string>& dropped_args) {
  OperatorDef def;
  def.set_type(type);
  def.set_name(int8_def.name());
  std::set<std::string> skipped = dropped_args;
  skipped.insert({"Y_scale", "Y_zero_point"});
  for (const Argument& arg : extra_args) skipped.insert(arg.name());
  for (const Argument& arg : int8_def.arg()) {
    if (skipped.count(arg.name()) == 0) *def.add_arg() = arg;
  }
  for (const Argument& arg : extra_args) *def.add_arg() = arg;
  for (int i = 0; i < num_inputs; ++i) {
    def.add_input(int8_def.input(i));
    inputs_.push_back(workspace_.CreateBlob(int8_def.input(i)));
  }
  for (int i = 0; i < num_outputs; ++i) {
    // Outputs get blobs of their own here, also when the Int8 op works in
    // place: the twin's output must not overwrite the input it reads.
    const std::string name =
        (i < int8_def.output_size() ? int8_def.output(i)
                                    : int8_def.output(0) + "_" + std::to_string(i)) +
        "__twin";
    def.add_output(name);
    outputs_.push_back(workspace_.CreateBlob(name));
  }
  op_ = CreateOperator(def, &workspace_);
}

TwinOp::~TwinOp() = default;

Tensor* TwinOp::input(int i) { return inputs_.at(i)->GetMutableTensor(); }

void TwinOp::Run() { op_->Run(); }

const Tensor& TwinOp::output(int i) const { return outputs_.at(i)->GetTensor(); }

Argument IntArgument(const std::string& name, int64_t value) {
  Argument arg;
  arg.set_name(name);
  arg.set_i(value);
  return arg;
}

}  // namespace doppio
