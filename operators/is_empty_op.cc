#include "operators/is_empty_op.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

void WriteBool(Tensor* out, bool value) {
  out->Resize(std::vector<int64_t>{});
  *out->mutable_data<bool>() = value;
}

std::vector<TensorShape> BoolScalar(const OperatorDef&, const std::vector<TensorShape>&) {
  TensorShape out;
  out.set_data_type(TensorProto::BOOL);
  return {out};
}

}  // namespace

void IsEmptyOp::RunOnDevice() { WriteBool(Output(0), Input(0).numel() == 0); }

void HasElementsOp::RunOnDevice() {
  bool any = false;
  for (int i = 0; i < InputSize(); ++i) any = any || Input(i).numel() > 0;
  WriteBool(Output(0), any);
}

REGISTER_CPU_OPERATOR(IsEmpty, IsEmptyOp);
REGISTER_CPU_OPERATOR(HasElements, HasElementsOp);

OPERATOR_SCHEMA(IsEmpty)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(BoolScalar)
    .Input(0, "X", "a tensor of any type")
    .Output(0, "is_empty", "bool scalar: X has no elements")
    .Doc("Whether X has no elements (a condition for If and While).");

OPERATOR_SCHEMA(HasElements)
    .NumInputs(1, INT_MAX)
    .NumOutputs(1)
    .TensorInferenceFunction(BoolScalar)
    .Input(0, "X", "tensors of any type")
    .Output(0, "has_elements", "bool scalar: some input has elements")
    .Doc("Whether any input has elements (a condition for If and While).");

SHOULD_NOT_DO_GRADIENT(IsEmpty, "a bool of the input's size");
SHOULD_NOT_DO_GRADIENT(HasElements, "a bool of the inputs' sizes");

}  // namespace doppio
