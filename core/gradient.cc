#include "core/gradient.h"

namespace doppio {

std::string GradientName(const std::string& blob) { return blob + "_grad"; }

GradientMakerBase::GradientMakerBase(const OperatorDef& def,
                                     const std::vector<GradientWrapper>& output_gradients)
    : def_(def),
      output_gradients_(output_gradients),
      input_gradients_(def.input_size()) {
  DOPPIO_ENFORCE_EQ(static_cast<int>(output_gradients_.size()), def.output_size(),
                    "op ", def.type(), " needs one gradient entry per output");
}

std::string GradientMakerBase::I(int i) const {
  DOPPIO_ENFORCE(i >= 0 && i < def_.input_size(), "op ", def_.type(),
                 " has no input ", i);
  return def_.input(i);
}

std::string GradientMakerBase::O(int i) const {
  DOPPIO_ENFORCE(i >= 0 && i < def_.output_size(), "op ", def_.type(),
                 " has no output ", i);
  return def_.output(i);
}

std::string GradientMakerBase::GI(int i) {
  input_gradients_.at(i).dense = GradientName(I(i));
  return input_gradients_[i].dense;
}

std::string GradientMakerBase::GI_I(int i) {
  input_gradients_.at(i).indices = I(i) + "_grad_indices";
  return input_gradients_[i].indices;
}

std::string GradientMakerBase::GI_V(int i) {
  input_gradients_.at(i).values = I(i) + "_grad_values";
  return input_gradients_[i].values;
}

bool GradientMakerBase::HasGO(int i) const {
  return i >= 0 && i < static_cast<int>(output_gradients_.size()) &&
         !output_gradients_[i].IsEmpty();
}

std::string GradientMakerBase::GO(int i) const {
  DOPPIO_ENFORCE(HasGO(i) && output_gradients_[i].IsDense(), "op ", def_.type(),
                 ": the gradient of output ", i, " ('", O(i), "') is not dense");
  return output_gradients_[i].dense;
}

std::string GradientMakerBase::GO_I(int i) const {
  DOPPIO_ENFORCE(HasGO(i) && output_gradients_[i].IsSparse(), "op ", def_.type(),
                 ": the gradient of output ", i, " is not sparse");
  return output_gradients_[i].indices;
}

std::string GradientMakerBase::GO_V(int i) const {
  DOPPIO_ENFORCE(HasGO(i) && output_gradients_[i].IsSparse(), "op ", def_.type(),
                 ": the gradient of output ", i, " is not sparse");
  return output_gradients_[i].values;
}

std::vector<OperatorDef> GradientMakerBase::SingleGradientDef(
    const std::string& type, const std::string& name,
    const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
    const google::protobuf::RepeatedPtrField<Argument>& args) {
  OperatorDef op;
  op.set_type(type);
  // Set even when empty, as Caffe2's CreateOperatorDef does.
  op.set_name(name);
  for (const auto& input : inputs) op.add_input(input);
  for (const auto& output : outputs) op.add_output(output);
  *op.mutable_arg() = args;
  op.set_is_gradient_op(true);
  return {op};
}

GradientOpsMeta GradientMakerBase::Get() {
  GradientOpsMeta meta;
  meta.ops = GetGradientDefs();
  for (OperatorDef& op : meta.ops) {
    if (MarksGradientOps()) op.set_is_gradient_op(true);
    if (CopyDeviceOption() && def_.has_device_option()) {
      *op.mutable_device_option() = def_.device_option();
    }
    if (CopyEngine() && def_.has_engine()) op.set_engine(def_.engine());
    if (CopyArguments() && op.arg_size() == 0) *op.mutable_arg() = def_.arg();
  }
  meta.input_gradients = input_gradients_;
  return meta;
}

namespace {
std::map<std::string, GradientRegistry::Entry>& Entries() {
  static auto* entries = new std::map<std::string, GradientRegistry::Entry>();
  return *entries;
}
}  // namespace

void GradientRegistry::Register(const std::string& type, Entry entry) {
  Entries()[type] = std::move(entry);
}

const GradientRegistry::Entry* GradientRegistry::Find(const std::string& type) {
  auto it = Entries().find(type);
  return it == Entries().end() ? nullptr : &it->second;
}

const std::map<std::string, GradientRegistry::Entry>& GradientRegistry::All() {
  return Entries();
}

GradientOpsMeta GetGradientForOp(const OperatorDef& def,
                                 const std::vector<GradientWrapper>& output_gradients) {
  const GradientRegistry::Entry* entry = GradientRegistry::Find(def.type());
  DOPPIO_ENFORCE(entry != nullptr, "op ", def.type(),
                 " has no gradient registered (no maker, NO_GRADIENT or "
                 "SHOULD_NOT_DO_GRADIENT)");
  switch (entry->kind) {
    case GradientRegistry::Kind::kNoGradient: {
      GradientOpsMeta meta;
      meta.input_gradients.resize(def.input_size());
      return meta;
    }
    case GradientRegistry::Kind::kShouldNotDoGradient:
      DOPPIO_THROW("op ", def.type(), " must not be differentiated: ", entry->reason);
    case GradientRegistry::Kind::kMaker:
      break;
  }
  return entry->creator(def, output_gradients)->Get();
}

}  // namespace doppio
