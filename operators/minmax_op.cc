#include "operators/minmax_op.h"

#include <algorithm>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

// Inputs [first, InputSize()) must have input `reference`'s shape and type.
void EnforceLikeInput(const OperatorBase& op, int reference, int first) {
  const Tensor& expected = TensorInput(op, reference);
  for (int i = first; i < op.InputSize(); ++i) {
    const Tensor& other = TensorInput(op, i);
    DOPPIO_ENFORCE(other.dims() == expected.dims(), "input ", i, " ('", op.input_name(i),
                   "') has shape ", other.dims(), " but input ", reference, " ('",
                   op.input_name(reference), "') has shape ", expected.dims(),
                   "; all inputs must have one shape");
    EnforceSameType(op, reference, expected, i, other);
  }
}

}  // namespace

template <class Select>
void MinMaxOp<Select>::RunOnDevice() {
  const Tensor& X0 = Input(0);
  EnforceLikeInput(*this, 0, 1);
  DispatchTypes(AllNumericTypes::With<float16>{}, input_name(0), X0.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x0 = X0.data<T>();
    Tensor* Y = Output(0);
    // In place over X0 this keeps the storage and its values.
    Y->Resize(X0.dims());
    T* y = Y->mutable_data<T>();
    const int64_t count = X0.numel();
    if (y != x0) std::copy(x0, x0 + count, y);
    const Select select;
    for (int i = 1; i < InputSize(); ++i) {
      const T* x = Input(i).template data<T>();
      for (int64_t k = 0; k < count; ++k) y[k] = select(y[k], x[k]);
    }
  });
}

void SelectGradientOp::RunOnDevice() {
  const Tensor& Y = Input(0);
  const Tensor& dY = Input(1);
  EnforceLikeInput(*this, 0, 1);
  DispatchTypes(FloatTypes{}, input_name(0), Y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* y = Y.data<T>();
    const T* dy = dY.data<T>();
    const int64_t count = Y.numel();
    for (int i = 0; i < OutputSize(); ++i) {
      const T* x = Input(i + 2).data<T>();
      Tensor* dX = Output(i);
      dX->Resize(Y.dims());
      T* dx = dX->mutable_data<T>();
      for (int64_t k = 0; k < count; ++k) dx[k] = x[k] == y[k] ? dy[k] : T(0);
    }
  });
}

REGISTER_CPU_OPERATOR(Max, MinMaxOp<MaxSelect>);
REGISTER_CPU_OPERATOR(Min, MinMaxOp<MinSelect>);
REGISTER_CPU_OPERATOR(MaxGradient, SelectGradientOp);
REGISTER_CPU_OPERATOR(MinGradient, SelectGradientOp);

namespace {

std::function<void(OpSchema&)> MinMaxSchema(const char* name, const char* output) {
  return [name, output](OpSchema& schema) {
    schema.NumInputs(1, 1 << 30)
        .NumOutputs(1)
        .AllowInplace({{0, 0}})
        .IdenticalTypeAndShape()
        .Input(0, "data_0",
               "first input (float32/64, float16, or an integer type); may be the "
               "output")
        .Output(0, output, MakeString("elementwise ", name, " of the inputs"))
        .Doc(MakeString("Elementwise ", name,
                        " of any number of tensors of one shape "
                        "and type; nan wins, as in numpy. With input 0 as the output the ",
                        name, " accumulates in place (which cannot be differentiated)."));
  };
}

std::function<void(OpSchema&)> SelectGradientSchema(const char* forward) {
  return [forward](OpSchema& schema) {
    schema.NumInputs(3, 1 << 30)
        .NumOutputs(1, 1 << 30)
        .NumInputsOutputs([](int in, int out) { return in == out + 2; })
        .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
          return std::vector<TensorShape>(def.output_size(), in.at(0));
        })
        .Input(0, "Y", MakeString(forward, "'s output"))
        .Input(1, "dY", MakeString("gradient of ", forward, "'s output"))
        .Input(2, "X_0", MakeString(forward, "'s inputs follow"))
        .Output(0, "dX_0", "gradient of each input, in order")
        .Doc(MakeString("Gradient of ", forward, ": dX_i = dY where X_i equals Y, else 0 "
                        "(every tied input gets dY)."));
  };
}

class GetSelectGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0), "op ", Def().type(), ": cannot differentiate ", Def().type(),
                   " computed in place over '", O(0), "': its gradient compares the "
                   "inputs with the output");
    std::vector<std::string> inputs = {O(0), GO(0)};
    std::vector<std::string> outputs;
    for (int i = 0; i < Def().input_size(); ++i) {
      inputs.push_back(I(i));
      outputs.push_back(GI(i));
    }
    return SingleGradientDef(Def().type() + "Gradient", "", inputs, outputs);
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

OPERATOR_SCHEMA(Max).Apply(MinMaxSchema("maximum", "max"));
OPERATOR_SCHEMA(Min).Apply(MinMaxSchema("minimum", "min"));
OPERATOR_SCHEMA(MaxGradient).Apply(SelectGradientSchema("Max"));
OPERATOR_SCHEMA(MinGradient).Apply(SelectGradientSchema("Min"));

REGISTER_GRADIENT(Max, GetSelectGradient);
REGISTER_GRADIENT(Min, GetSelectGradient);
SHOULD_NOT_DO_GRADIENT(MaxGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MinGradient, kSecondOrder);

}  // namespace doppio
