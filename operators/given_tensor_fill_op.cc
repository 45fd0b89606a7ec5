#include "operators/given_tensor_fill_op.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

DataType GivenTensorFillType(const OperatorBase& op, DataType variant_type) {
  if (variant_type != DataType::kFloat || !op.HasArgument("dtype")) return variant_type;
  return DtypeArgumentType(
      op.type(), op.GetSingleArgument<int>("dtype", static_cast<int>(DataType::kFloat)));
}

}  // namespace

template <typename T>
GivenTensorFillOp<T>::GivenTensorFillOp(const OperatorDef& def, Workspace* workspace)
    : FillerOp<CPUContext>(def, workspace) {
  const DataType dtype = GivenTensorFillType(*this, DataTypeFor<T>());
  DispatchDataType(dtype, [&](auto tag) {
    using V = typename decltype(tag)::type;
    const std::vector<V> values = ListArgumentAs<V>(*this, "values");
    values_.Resize({static_cast<int64_t>(values.size())});
    std::copy(values.begin(), values.end(), values_.mutable_data<V>());
  });
  // With a fixed shape argument the mismatch is known now; report it early.
  if (InputSize() == 0) {
    const int64_t expected = CheckedNumElements(shape_);
    DOPPIO_ENFORCE(values_.numel() == expected, "argument 'values' has ", values_.numel(),
                   " elements but 'shape' ", shape_, " needs ", expected);
  }
}

template <typename T>
void GivenTensorFillOp<T>::Fill(Tensor* output) {
  DOPPIO_ENFORCE(values_.numel() == output->numel(), "argument 'values' has ", values_.numel(),
                 " elements but the output shape ", output->dims(), " needs ", output->numel());
  DispatchDataType(values_.dtype(), [&](auto tag) {
    using V = typename decltype(tag)::type;
    const V* source = values_.data<V>();
    std::copy(source, source + values_.numel(), output->mutable_data<V>());
  });
}

template class GivenTensorFillOp<float>;
template class GivenTensorFillOp<double>;
template class GivenTensorFillOp<bool>;
template class GivenTensorFillOp<int32_t>;
template class GivenTensorFillOp<int64_t>;
template class GivenTensorFillOp<std::string>;

REGISTER_CPU_OPERATOR(GivenTensorFill, GivenTensorFillOp<float>);
REGISTER_CPU_OPERATOR(GivenTensorDoubleFill, GivenTensorFillOp<double>);
REGISTER_CPU_OPERATOR(GivenTensorBoolFill, GivenTensorFillOp<bool>);
REGISTER_CPU_OPERATOR(GivenTensorIntFill, GivenTensorFillOp<int32_t>);
REGISTER_CPU_OPERATOR(GivenTensorInt64Fill, GivenTensorFillOp<int64_t>);
REGISTER_CPU_OPERATOR(GivenTensorStringFill, GivenTensorFillOp<std::string>);

namespace {

// What the GivenTensor*Fill variants share: the filler part for the
// variant's element type and the `values` argument.
std::function<void(OpSchema&)> GivenTensorFillSchema(DataType variant_type) {
  return [variant_type](OpSchema& schema) {
    schema.NumInputs(0, 1)
        .Arg("values",
             "(list) the elements in row-major order; their count must equal the "
             "number of elements of the shape",
             true)
        .Apply(FillerSchema(variant_type));
  };
}

constexpr const char kNoGradientReason[] = "its values are constants from the op's arguments";

}  // namespace

OPERATOR_SCHEMA(GivenTensorFill)
    .Apply(GivenTensorFillSchema(DataType::kFloat))
    .Arg("dtype", "(int, TensorProto.DataType, default FLOAT) the element type")
    .Output(0, "output", "tensor holding `values`")
    .Doc("Fills the output with the floats (or `dtype` elements) in `values`.");

OPERATOR_SCHEMA(GivenTensorDoubleFill)
    .Apply(GivenTensorFillSchema(DataType::kDouble))
    .Output(0, "output", "float64 tensor holding `values`")
    .Doc("Fills the output with the float64 elements in `values`.");

OPERATOR_SCHEMA(GivenTensorBoolFill)
    .Apply(GivenTensorFillSchema(DataType::kBool))
    .Output(0, "output", "bool tensor holding `values`")
    .Doc("Fills the output with the bool elements (ints, 0 or not) in `values`.");

OPERATOR_SCHEMA(GivenTensorIntFill)
    .Apply(GivenTensorFillSchema(DataType::kInt32))
    .Output(0, "output", "int32 tensor holding `values`")
    .Doc("Fills the output with the int32 elements in `values`.");

OPERATOR_SCHEMA(GivenTensorInt64Fill)
    .Apply(GivenTensorFillSchema(DataType::kInt64))
    .Output(0, "output", "int64 tensor holding `values`")
    .Doc("Fills the output with the int64 elements in `values`.");

OPERATOR_SCHEMA(GivenTensorStringFill)
    .Apply(GivenTensorFillSchema(DataType::kString))
    .Output(0, "output", "string tensor holding `values`")
    .Doc("Fills the output with the strings in `values`.");

NO_GRADIENT(GivenTensorFill, kNoGradientReason);
NO_GRADIENT(GivenTensorDoubleFill, kNoGradientReason);
NO_GRADIENT(GivenTensorBoolFill, kNoGradientReason);
NO_GRADIENT(GivenTensorIntFill, kNoGradientReason);
NO_GRADIENT(GivenTensorInt64Fill, kNoGradientReason);
NO_GRADIENT(GivenTensorStringFill, kNoGradientReason);

}  // namespace doppio
