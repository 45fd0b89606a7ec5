#include "operators/reshape_op.h"

#include <optional>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/shape_inference_utils.h"

namespace doppio {

// The product of the requested dims, or nullopt when it exceeds int64 (a
// shape of 2^40 x 2^40 must be reported as too large, not as 0 elements).
namespace {
std::optional<int64_t> KnownProduct(const std::vector<int64_t>& dims, int skip) {
  int64_t product = 1;
  for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
    if (i == skip) continue;
    if (__builtin_mul_overflow(product, dims[i], &product)) return std::nullopt;
  }
  return product;
}
}  // namespace

std::vector<int64_t> ResolveReshape(const std::string& op_type,
                                    const std::vector<int64_t>& input_dims,
                                    std::vector<int64_t> requested) {
  int unknown = -1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t& dim = requested[i];
    if (dim == 0) {
      DOPPIO_ENFORCE_ARG(i < input_dims.size(), "op ", op_type, ": new shape ", requested,
                         " has 0 (copy the input's dim) at position ", i, " but the input ",
                         input_dims, " has only ", input_dims.size(), " dims");
      dim = input_dims[i];
    }
    if (dim == -1) {
      DOPPIO_ENFORCE_ARG(unknown == -1, "op ", op_type, ": new shape ", requested,
                         " has more than one -1");
      unknown = static_cast<int>(i);
      continue;
    }
    DOPPIO_ENFORCE_ARG(dim >= 0, "op ", op_type, ": new shape ", requested,
                       " has the negative dim ", dim, " (only -1 and 0 are special)");
  }
  const int64_t total = CheckedNumElements(input_dims);
  const std::optional<int64_t> known = KnownProduct(requested, unknown);
  DOPPIO_ENFORCE_ARG(known.has_value(), "op ", op_type, ": cannot reshape the input of shape ",
                     input_dims, " (", total, " elements) to ", requested,
                     " (more than 2^63 elements)");
  const int64_t known_size = *known;
  if (unknown >= 0) {
    DOPPIO_ENFORCE_ARG(known_size != 0 && total % known_size == 0, "op ", op_type,
                       ": cannot reshape the input of shape ", input_dims, " (", total,
                       " elements) to ", requested);
    requested[unknown] = total / known_size;
  } else {
    DOPPIO_ENFORCE_ARG(known_size == total, "op ", op_type,
                       ": cannot reshape the input of shape ", input_dims, " (", total,
                       " elements) to ", requested, " (", known_size, " elements)");
  }
  return requested;
}

// ---- Reshape ----

ReshapeOp::ReshapeOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      new_shape_(GetRepeatedArgument<int64_t>("shape")) {
  if (InputSize() == 2) {
    DOPPIO_ENFORCE(!HasArgument("shape"), "the new shape is input '", input_name(1),
                   "'; do not also pass argument 'shape'");
  } else {
    DOPPIO_ENFORCE(HasArgument("shape"),
                   "give the new shape as argument 'shape' or as a second input");
  }
}

void ReshapeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t> old_dims = X.dims();
  std::vector<int64_t> requested = new_shape_;
  // old_shape takes the type of a shape input (int64 with the argument).
  DataType shape_type = DataType::kInt64;
  if (InputSize() == 2) {
    const Tensor& shape = Input(1);
    DOPPIO_ENFORCE(shape.ndim() == 1, "new shape '", input_name(1), "' must be 1-D, not of shape ",
                   shape.dims());
    shape_type = shape.dtype();
    DispatchTypes(TypeList<int32_t, int64_t>{}, input_name(1), shape_type, [&](auto tag) {
      using I = typename decltype(tag)::type;
      const I* values = shape.data<I>();
      requested.assign(values, values + shape.numel());
    });
  }
  const std::vector<int64_t> new_dims = ResolveReshape(type(), old_dims, requested);

  Tensor* old_shape = Output(1);
  old_shape->Resize({static_cast<int64_t>(old_dims.size())});
  DispatchTypes(TypeList<int32_t, int64_t>{}, input_name(0), shape_type, [&](auto tag) {
    using I = typename decltype(tag)::type;
    I* values = old_shape->mutable_data<I>();
    for (size_t i = 0; i < old_dims.size(); ++i) values[i] = static_cast<I>(old_dims[i]);
  });

  Tensor* Y = Output(0);
  if (!IsInputOutputAlias(0, 0)) Y->CopyFrom(X);
  Y->Reshape(new_dims);
}

// ---- Flatten, FlattenToVec, ResizeLike ----

void FlattenOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const int ndim = X.ndim();
  DOPPIO_ENFORCE(axis_ >= -ndim && axis_ <= ndim, "axis ", axis_, " is outside [", -ndim, ", ",
                 ndim, "] for '", input_name(0), "' of shape ", X.dims());
  const int axis = axis_ < 0 ? axis_ + ndim : axis_;
  const std::vector<int64_t> dims = {X.SizeToDim(axis), X.SizeFromDim(axis)};
  Tensor* Y = Output(0);
  Y->CopyFrom(X);
  Y->Reshape(dims);
}

void FlattenToVecOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.ndim() >= 1, "'", input_name(0), "' must have at least one dim, not shape ",
                 X.dims());
  Tensor* Y = Output(0);
  Y->CopyFrom(X);
  Y->Reshape({X.numel()});
}

void ResizeLikeOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const std::vector<int64_t> dims = Input(1).dims();
  DOPPIO_ENFORCE(data.numel() == CheckedNumElements(dims), "'", input_name(0), "' of shape ",
                 data.dims(), " cannot take the shape ", dims, " of '", input_name(1),
                 "': the element counts differ");
  Tensor* Y = Output(0);
  Y->CopyFrom(data);
  Y->Reshape(dims);
}

REGISTER_CPU_OPERATOR(Reshape, ReshapeOp);
REGISTER_CPU_OPERATOR(Flatten, FlattenOp);
REGISTER_CPU_OPERATOR(FlattenToVec, FlattenToVecOp);
REGISTER_CPU_OPERATOR(ResizeLike, ResizeLikeOp);

namespace {

std::vector<TensorShape> ReshapeInference(const OperatorDef& def,
                                          const std::vector<TensorShape>& in) {
  const std::vector<int64_t> old_dims = DimsOf(in.at(0));
  TensorShape old_shape = MakeShape({static_cast<int64_t>(old_dims.size())}, TensorProto::INT64);
  ArgumentHelper args(def);
  if (!args.Has("shape")) {
    // The new shape is data; only its type is known.
    TensorShape reshaped;
    reshaped.set_data_type(in[0].data_type());
    reshaped.set_unknown_shape(true);
    if (in.size() > 1) old_shape.set_data_type(in[1].data_type());
    return {reshaped, old_shape};
  }
  const std::vector<int64_t> dims =
      ResolveReshape(def.type(), old_dims, args.GetRepeated<int64_t>("shape"));
  return {MakeShape(dims, in[0].data_type()), old_shape};
}

}  // namespace

OPERATOR_SCHEMA(Reshape)
    .NumInputs(1, 2)
    .NumOutputs(2)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(ReshapeInference)
    .Arg("shape",
         "(list of ints) the new shape; 0 copies the input's dim at that position, "
         "one -1 takes the remaining size. Not with a second input")
    .Input(0, "data", "tensor of any type")
    .Input(1, "new_shape", "(optional) 1-D int32 or int64 tensor holding the new shape")
    .Output(0, "reshaped", "the input's elements in the new shape")
    .Output(1, "old_shape", "1-D tensor of the input's dims (int64, or new_shape's type)")
    .Doc("Reshapes the input like numpy.reshape, with Caffe2's 0 (keep the "
         "dim) and -1 (infer the dim).");

OPERATOR_SCHEMA(Flatten)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const std::vector<int64_t> dims = DimsOf(in.at(0));
      int axis = ArgumentHelper(def).GetSingle<int>("axis", 1);
      if (axis < 0) axis += static_cast<int>(dims.size());
      int64_t outer = 1, inner = 1;
      for (size_t i = 0; i < dims.size(); ++i) (static_cast<int>(i) < axis ? outer : inner) *= dims[i];
      return std::vector<TensorShape>{MakeShape({outer, inner}, in[0].data_type())};
    })
    .Arg("axis", "(int, default 1) dims before it form the rows, dims from it the columns")
    .Input(0, "input", "tensor of any type")
    .Output(0, "output", "2-D tensor [prod(dims[:axis]), prod(dims[axis:])]")
    .Doc("Flattens the input into a matrix at `axis`.");

OPERATOR_SCHEMA(FlattenToVec)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{
          MakeShape({CheckedNumElements(DimsOf(in.at(0)))}, in[0].data_type())};
    })
    .Input(0, "input", "tensor of rank >= 1")
    .Output(0, "output", "1-D tensor of the input's elements")
    .Doc("Flattens the input into a vector.");

OPERATOR_SCHEMA(ResizeLike)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(ShapeOfInput(1))
    .Input(0, "data", "tensor whose elements are copied")
    .Input(1, "shape_tensor", "tensor whose shape the output takes (same element count)")
    .Output(0, "output", "data's elements in shape_tensor's shape")
    .Doc("Copies input 0 into the shape of input 1.");

namespace {

class GetReshapeGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // Back to the old shape, which the forward op recorded in output 1.
    return SingleGradientDef("Reshape", "", {GO(0), O(1)}, {GI(0), "_" + GI(0) + "_dims"});
  }
};

class GetFlattenGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ResizeLike", "", {GO(0), I(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(Reshape, GetReshapeGradient);
REGISTER_GRADIENT(Flatten, GetFlattenGradient);
REGISTER_GRADIENT(FlattenToVec, GetFlattenGradient);
SHOULD_NOT_DO_GRADIENT(ResizeLike, "it serves as the gradient op of Flatten and FlattenToVec");

}  // namespace doppio
