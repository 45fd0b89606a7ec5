#include "core/schema.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/enforce.h"

namespace doppio {

OpSchema::OpSchema(std::string type, std::string file, int line)
    : type_(std::move(type)), file_(std::move(file)), line_(line) {}

OpSchema& OpSchema::NumInputs(int min, int max) {
  min_input_ = min;
  max_input_ = max;
  return *this;
}

OpSchema& OpSchema::NumInputs(std::set<int> allowed) {
  allowed_inputs_ = std::move(allowed);
  min_input_ = *allowed_inputs_.begin();
  max_input_ = *allowed_inputs_.rbegin();
  return *this;
}

OpSchema& OpSchema::NumOutputs(int min, int max) {
  min_output_ = min;
  max_output_ = max;
  return *this;
}

OpSchema& OpSchema::NumOutputs(std::set<int> allowed) {
  allowed_outputs_ = std::move(allowed);
  min_output_ = *allowed_outputs_.begin();
  max_output_ = *allowed_outputs_.rbegin();
  return *this;
}

OpSchema& OpSchema::NumInputsOutputs(std::function<bool(int, int)> valid) {
  num_inputs_outputs_ = std::move(valid);
  return *this;
}

OpSchema& OpSchema::AllowInplace(std::set<std::pair<int, int>> pairs) {
  return AllowInplace([pairs](int in, int out) { return pairs.count({in, out}) > 0; });
}

OpSchema& OpSchema::AllowInplace(std::function<bool(int, int)> allowed) {
  inplace_allowed_ = std::move(allowed);
  return *this;
}

OpSchema& OpSchema::EnforceInplace(std::set<std::pair<int, int>> pairs) {
  inplace_enforced_ = std::move(pairs);
  return *this;
}

OpSchema& OpSchema::TensorInferenceFunction(InferenceFunction function) {
  inference_ = std::move(function);
  return *this;
}

OpSchema& OpSchema::CostInferenceFunction(CostInferenceFunctionType function) {
  cost_inference_ = std::move(function);
  return *this;
}

OpSchema& OpSchema::IdenticalTypeAndShape() {
  return TensorInferenceFunction(
      [](const OperatorDef&, const std::vector<TensorShape>& inputs) {
        return std::vector<TensorShape>{inputs.at(0)};
      });
}

OpSchema& OpSchema::Doc(std::string doc) {
  doc_ = std::move(doc);
  return *this;
}

OpSchema& OpSchema::Arg(std::string name, std::string description, bool required) {
  args_.push_back({std::move(name), std::move(description), required});
  return *this;
}

OpSchema& OpSchema::Input(int index, std::string name, std::string description) {
  if (static_cast<int>(inputs_.size()) <= index) inputs_.resize(index + 1);
  inputs_[index] = {std::move(name), std::move(description)};
  return *this;
}

OpSchema& OpSchema::Output(int index, std::string name, std::string description) {
  if (static_cast<int>(outputs_.size()) <= index) outputs_.resize(index + 1);
  outputs_[index] = {std::move(name), std::move(description)};
  return *this;
}

bool OpSchema::inplace_allowed(int input, int output) const {
  return inplace_enforced(input, output) ||
         (inplace_allowed_ && inplace_allowed_(input, output));
}

bool OpSchema::inplace_enforced(int input, int output) const {
  return inplace_enforced_.count({input, output}) > 0;
}

std::vector<TensorShape> OpSchema::InferTensor(
    const OperatorDef& def, const std::vector<TensorShape>& inputs) const {
  DOPPIO_ENFORCE(has_shape_inference(), "op ", type_, " has no shape inference");
  return inference_(def, inputs);
}

OpSchema::Cost OpSchema::InferCost(const OperatorDef& def,
                                   const std::vector<TensorShape>& inputs) const {
  DOPPIO_ENFORCE(HasCostInferenceFunction(), "op ", type_, " has no cost inference");
  return cost_inference_(def, inputs);
}

void OpSchema::Verify(const OperatorDef& def) const {
  const int num_in = def.input_size();
  const int num_out = def.output_size();
  auto describe_range = [](int min, int max, const std::set<int>& allowed) {
    if (!allowed.empty()) return MakeString(std::vector<int>(allowed.begin(), allowed.end()));
    if (min == max) return MakeString(min);
    if (max >= (1 << 30)) return MakeString(min, " or more");
    return MakeString(min, " to ", max);
  };
  const bool inputs_ok = allowed_inputs_.empty()
                             ? (num_in >= min_input_ && num_in <= max_input_)
                             : allowed_inputs_.count(num_in) > 0;
  DOPPIO_ENFORCE(inputs_ok, "op ", type_, " takes ",
                 describe_range(min_input_, max_input_, allowed_inputs_),
                 " inputs, got ", num_in);
  const bool outputs_ok = allowed_outputs_.empty()
                              ? (num_out >= min_output_ && num_out <= max_output_)
                              : allowed_outputs_.count(num_out) > 0;
  DOPPIO_ENFORCE(outputs_ok, "op ", type_, " takes ",
                 describe_range(min_output_, max_output_, allowed_outputs_),
                 " outputs, got ", num_out);
  if (num_inputs_outputs_) {
    DOPPIO_ENFORCE(num_inputs_outputs_(num_in, num_out), "op ", type_,
                   " cannot take ", num_in, " inputs with ", num_out, " outputs");
  }
  // Kernels write each output through its own tensor: one blob named as two
  // outputs would be resized and reallocated under the other's pointers
  // (found by fuzzing, as a use-after-free in Concat).
  std::map<std::string, int> first_output;
  for (int out = 0; out < num_out; ++out) {
    const auto inserted = first_output.emplace(def.output(out), out);
    DOPPIO_ENFORCE(inserted.second, "op ", type_, " names '", def.output(out),
                   "' as both output ", inserted.first->second, " and output ", out,
                   "; the outputs of an op must be distinct blobs");
  }
  for (int in = 0; in < num_in; ++in) {
    for (int out = 0; out < num_out; ++out) {
      const bool same = def.input(in) == def.output(out);
      if (same && !inplace_allowed(in, out)) {
        DOPPIO_THROW("op ", type_, " cannot run in place: input ", in,
                     " and output ", out, " are both '", def.input(in), "'");
      }
      if (!same && inplace_enforced(in, out)) {
        DOPPIO_THROW("op ", type_, " must run in place: input ", in, " ('",
                     def.input(in), "') and output ", out, " ('", def.output(out),
                     "') must be the same blob");
      }
    }
  }
}

std::string OpSchema::Summary() const {
  std::ostringstream ss;
  auto range = [](int min, int max) {
    if (min == max) return MakeString(min);
    if (max >= (1 << 30)) return MakeString(min, "+");
    return MakeString(min, "-", max);
  };
  ss << "inputs " << range(min_input_, max_input_) << ", outputs "
     << range(min_output_, max_output_);
  if (!inplace_enforced_.empty()) ss << ", in-place enforced";
  else if (inplace_allowed_) ss << ", in-place allowed";
  if (has_shape_inference()) ss << ", shape inference";
  if (low_precision_in_float32_) ss << ", float16/bfloat16 computed in float32";
  return ss.str();
}

std::map<std::string, OpSchema>& OpSchemaRegistry::Map() {
  static auto* schemas = new std::map<std::string, OpSchema>();
  return *schemas;
}

OpSchema& OpSchemaRegistry::NewSchema(const std::string& type, const char* file,
                                      int line) {
  auto& schemas = Map();
  auto existing = schemas.find(type);
  if (existing != schemas.end()) {
    // Static initialization cannot throw usefully; this is a build defect.
    std::fprintf(stderr, "doppio: schema for op %s defined twice (%s:%d and %s:%d)\n",
                 type.c_str(), existing->second.file().c_str(),
                 existing->second.line(), file, line);
    std::abort();
  }
  return schemas.emplace(type, OpSchema(type, file, line)).first->second;
}

const OpSchema* OpSchemaRegistry::Schema(const std::string& type) {
  const auto& schemas = Map();
  auto it = schemas.find(type);
  return it == schemas.end() ? nullptr : &it->second;
}

const std::map<std::string, OpSchema>& OpSchemaRegistry::All() { return Map(); }

OpSchema& OpSchema::BlobNameArgs(std::set<std::string> names) {
  blob_name_args_.insert(names.begin(), names.end());
  return *this;
}

OpSchema& OpSchema::NetArgs(std::set<std::string> names) {
  net_args_.insert(names.begin(), names.end());
  return *this;
}

namespace {

void RenameAll(google::protobuf::RepeatedPtrField<std::string>* names,
               const std::function<std::string(const std::string&)>& rename) {
  for (std::string& name : *names) name = rename(name);
}

}  // namespace

void RenameOpBlobs(OperatorDef* op, const std::function<std::string(const std::string&)>& rename) {
  RenameAll(op->mutable_input(), rename);
  RenameAll(op->mutable_output(), rename);
  RenameAll(op->mutable_control_input(), rename);
  const OpSchema* schema = OpSchemaRegistry::Schema(op->type());
  if (schema == nullptr) return;
  for (Argument& arg : *op->mutable_arg()) {
    if (schema->blob_name_args().count(arg.name())) {
      if (arg.has_s()) arg.set_s(rename(arg.s()));
      RenameAll(arg.mutable_strings(), rename);
    } else if (schema->net_args().count(arg.name()) && arg.has_n()) {
      NetDef* net = arg.mutable_n();
      for (OperatorDef& inner : *net->mutable_op()) RenameOpBlobs(&inner, rename);
      RenameAll(net->mutable_external_input(), rename);
      RenameAll(net->mutable_external_output(), rename);
    }
  }
}

}  // namespace doppio
