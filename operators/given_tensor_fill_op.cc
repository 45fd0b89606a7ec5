#include "operators/given_tensor_fill_op.h"

#include <algorithm>
#include <type_traits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

DataType GivenTensorFillType(const OperatorBase& op, DataType variant_type) {
  if (variant_type != DataType::kFloat || !op.HasArgument("dtype")) return variant_type;
  const int dtype = op.GetSingleArgument<int>("dtype", static_cast<int>(DataType::kFloat));
  DataType type = static_cast<DataType>(dtype);
  if (type == DataType::kByte) type = DataType::kUint8;
  DOPPIO_ENFORCE(dtype != static_cast<int>(DataType::kUndefined) && IsStorableType(type),
                 "op ", op.type(), ": argument 'dtype' has the value ", dtype,
                 ", which is not a TensorProto.DataType a tensor can hold");
  return type;
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
    DOPPIO_ENFORCE(values_.numel() == expected, "op ", type(), ": argument 'values' has ",
                   values_.numel(), " elements but 'shape' ", shape_, " needs ", expected);
  }
}

template <typename T>
void GivenTensorFillOp<T>::Fill(Tensor* output) {
  DOPPIO_ENFORCE(values_.numel() == output->numel(), "op ", type(),
                 ": argument 'values' has ", values_.numel(),
                 " elements but the output shape ", output->dims(), " needs ",
                 output->numel());
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
constexpr const char kValuesDoc[] =
    "(list) the elements in row-major order; their count must equal the "
    "number of elements of the shape";
constexpr const char kShapeDoc[] = "(list of ints) the output shape; not with an input";
constexpr const char kExtraShapeDoc[] =
    "(list of ints) dimensions appended to the input's shape";
constexpr const char kInputAsShapeDoc[] =
    "(bool, default 0) take the shape from the values of the 1-D int64 input";
constexpr const char kInputDoc[] =
    "(optional) tensor whose shape (or values) gives the output shape";
}  // namespace

OPERATOR_SCHEMA(GivenTensorFill)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(FillerShapeInference(DataType::kFloat))
    .Arg("values", kValuesDoc, true)
    .Arg("dtype", "(int, TensorProto.DataType, default FLOAT) the element type")
    .Arg("shape", kShapeDoc)
    .Arg("extra_shape", kExtraShapeDoc)
    .Arg("input_as_shape", kInputAsShapeDoc)
    .Input(0, "input", kInputDoc)
    .Output(0, "output", "tensor holding `values`")
    .Doc("Fills the output with the floats (or `dtype` elements) in `values`.");

OPERATOR_SCHEMA(GivenTensorDoubleFill)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(FillerShapeInference(DataType::kDouble))
    .Arg("values", kValuesDoc, true)
    .Arg("shape", kShapeDoc)
    .Arg("extra_shape", kExtraShapeDoc)
    .Arg("input_as_shape", kInputAsShapeDoc)
    .Input(0, "input", kInputDoc)
    .Output(0, "output", "float64 tensor holding `values`")
    .Doc("Fills the output with the float64 elements in `values`.");

OPERATOR_SCHEMA(GivenTensorBoolFill)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(FillerShapeInference(DataType::kBool))
    .Arg("values", kValuesDoc, true)
    .Arg("shape", kShapeDoc)
    .Arg("extra_shape", kExtraShapeDoc)
    .Arg("input_as_shape", kInputAsShapeDoc)
    .Input(0, "input", kInputDoc)
    .Output(0, "output", "bool tensor holding `values`")
    .Doc("Fills the output with the bool elements (ints, 0 or not) in `values`.");

OPERATOR_SCHEMA(GivenTensorIntFill)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(FillerShapeInference(DataType::kInt32))
    .Arg("values", kValuesDoc, true)
    .Arg("shape", kShapeDoc)
    .Arg("extra_shape", kExtraShapeDoc)
    .Arg("input_as_shape", kInputAsShapeDoc)
    .Input(0, "input", kInputDoc)
    .Output(0, "output", "int32 tensor holding `values`")
    .Doc("Fills the output with the int32 elements in `values`.");

OPERATOR_SCHEMA(GivenTensorInt64Fill)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(FillerShapeInference(DataType::kInt64))
    .Arg("values", kValuesDoc, true)
    .Arg("shape", kShapeDoc)
    .Arg("extra_shape", kExtraShapeDoc)
    .Arg("input_as_shape", kInputAsShapeDoc)
    .Input(0, "input", kInputDoc)
    .Output(0, "output", "int64 tensor holding `values`")
    .Doc("Fills the output with the int64 elements in `values`.");

OPERATOR_SCHEMA(GivenTensorStringFill)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(FillerShapeInference(DataType::kString))
    .Arg("values", kValuesDoc, true)
    .Arg("shape", kShapeDoc)
    .Arg("extra_shape", kExtraShapeDoc)
    .Arg("input_as_shape", kInputAsShapeDoc)
    .Input(0, "input", kInputDoc)
    .Output(0, "output", "string tensor holding `values`")
    .Doc("Fills the output with the strings in `values`.");

NO_GRADIENT(GivenTensorFill, "its values are constants from the op's arguments");
NO_GRADIENT(GivenTensorDoubleFill, "its values are constants from the op's arguments");
NO_GRADIENT(GivenTensorBoolFill, "its values are constants from the op's arguments");
NO_GRADIENT(GivenTensorIntFill, "its values are constants from the op's arguments");
NO_GRADIENT(GivenTensorInt64Fill, "its values are constants from the op's arguments");
NO_GRADIENT(GivenTensorStringFill, "its values are constants from the op's arguments");

}  // namespace doppio
