#include "operators/weighted_sum_op.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/math_functors.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

// A weight: one element, float32 (as Caffe2 writes them) or the data's type.
template <typename T>
T ReadWeight(const OperatorBase& op, int i) {
  const Tensor& weight = TensorInput(op, i);
  DOPPIO_ENFORCE(weight.numel() == 1, "weight '", op.input_name(i),
                 "' must hold one element, not shape ", weight.dims());
  if (weight.dtype() == DataType::kFloat) return static_cast<T>(weight.data<float>()[0]);
  DOPPIO_ENFORCE(weight.dtype() == DataTypeFor<T>(), "weight '", op.input_name(i), "' holds ",
                 DataTypeName(weight.dtype()), "; weights are float32 or the data's type ",
                 DataTypeName(DataTypeFor<T>()));
  return weight.data<T>()[0];
}

// Data input i has input 0's shape and type.
void EnforceLikeFirst(const OperatorBase& op, const Tensor& first, int i) {
  const Tensor& x = TensorInput(op, i);
  DOPPIO_ENFORCE(x.dims() == first.dims(), "input ", i, " ('", op.input_name(i), "') has shape ",
                 x.dims(), " but '", op.input_name(0), "' has shape ", first.dims());
  EnforceSameType(op, 0, first, i, x);
}

}  // namespace

WeightedSumOp::WeightedSumOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace) {}

void WeightedSumOp::RunOnDevice() {
  const Tensor& X0 = Input(0);
  for (int i = 2; i < InputSize(); i += 2) EnforceLikeFirst(*this, X0, i);
  DispatchTypes(FloatTypes{}, input_name(0), X0.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T w0 = ReadWeight<T>(*this, 1);
    const T* x0 = X0.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(X0.dims());
    T* y = Y->mutable_data<T>();
    const int64_t count = X0.numel();
    functors::CpuWeightedTerm(count, functors::ScalarOperand<T>{nullptr, w0}, x0, false, y);
    for (int i = 2; i < InputSize(); i += 2) {
      const functors::ScalarOperand<T> w{nullptr, ReadWeight<T>(*this, i + 1)};
      functors::CpuWeightedTerm(count, w, Input(i).data<T>(), true, y);
    }
  });
}

WeightedSumGradientOp::WeightedSumGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      grad_on_w_(GetSingleArgument<bool>("grad_on_w", false)) {
  const int pairs = InputSize() / 2;
  DOPPIO_ENFORCE_EQ(OutputSize(), grad_on_w_ ? 2 * pairs : pairs, "with grad_on_w=", grad_on_w_,
                    " and ", pairs, " (X, w) pairs the op has one output per ",
                    grad_on_w_ ? "X and per w" : "X");
}

void WeightedSumGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  const int pairs = InputSize() / 2;
  for (int p = 0; p < pairs; ++p) {
    const Tensor& x = Input(1 + 2 * p);
    DOPPIO_ENFORCE(x.dims() == dY.dims(), "input '", input_name(1 + 2 * p), "' has shape ",
                   x.dims(), " but '", input_name(0), "' has shape ", dY.dims());
    EnforceSameType(*this, 0, dY, 1 + 2 * p, x);
  }
  DispatchTypes(FloatTypes{}, input_name(0), dY.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    const int64_t count = dY.numel();
    // The weight gradients first: a dX output may overwrite dY.
    std::vector<T> weight_grads(pairs, T(0));
    if (grad_on_w_) {
      for (int p = 0; p < pairs; ++p) {
        const T* x = Input(1 + 2 * p).data<T>();
        T dot = T(0);
        for (int64_t k = 0; k < count; ++k) dot += dy[k] * x[k];
        weight_grads[p] = dot;
      }
    }
    std::vector<T> scaled;
    for (int p = 0; p < pairs; ++p) {
      const T w = ReadWeight<T>(*this, 2 + 2 * p);
      Tensor* dX = Output(p);
      if (IsInputOutputAlias(0, p)) {
        // In place over dY (allowed for dX_0 only): later dX_i still need dY.
        scaled.assign(dy, dy + count);
        dy = scaled.data();
      }
      dX->Resize(dY.dims());
      T* dx = dX->mutable_data<T>();
      for (int64_t k = 0; k < count; ++k) dx[k] = w * dy[k];
    }
    if (grad_on_w_) {
      for (int p = 0; p < pairs; ++p) {
        Tensor* dW = Output(pairs + p);
        // The weight's own shape and type.
        const Tensor& weight = Input(2 + 2 * p);
        dW->Resize(weight.dims());
        DispatchTypes(FloatTypes{}, input_name(2 + 2 * p), weight.dtype(), [&](auto wtag) {
          using W = typename decltype(wtag)::type;
          dW->mutable_data<W>()[0] = static_cast<W>(weight_grads[p]);
        });
      }
    }
  });
}

REGISTER_CPU_OPERATOR(WeightedSum, WeightedSumOp);
REGISTER_CPU_OPERATOR(WeightedSumGradient, WeightedSumGradientOp);

OPERATOR_SCHEMA(WeightedSum).LowPrecisionInFloat32()
    .Elementwise()
    .NumInputs(2, 1 << 30)
    .NumOutputs(1)
    .NumInputsOutputs([](int in, int) { return in % 2 == 0; })
    // Only X_0: Y is written while the later X_i are still read.
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "data_0", "first tensor (float32 or float64); may be the output")
    .Input(1, "weight_0", "its weight: one element, float32 or the data's type")
    .Output(0, "output", "sum of weight_i * data_i, of data_0's shape")
    .Doc("Weighted sum of (data, weight) pairs X_0, w_0, X_1, w_1, ... of one "
         "shape. Only X_0 may be the output (in place).");

OPERATOR_SCHEMA(WeightedSumGradient)
    .NumInputs(3, 1 << 30)
    .NumOutputs(1, 1 << 30)
    .NumInputsOutputs([](int in, int) { return in % 2 == 1; })
    .AllowInplace({{0, 0}})
    .Arg("grad_on_w", "(bool, default 0) also output the gradient of every weight")
    .Input(0, "dY", "gradient of WeightedSum's output")
    .Input(1, "data_0", "WeightedSum's inputs X_0, w_0, X_1, w_1, ... follow")
    .Output(0, "dX_0", "w_i * dY for every X_i, then (grad_on_w) <dY, X_i> for every w_i")
    .Doc("Gradient of WeightedSum.");

namespace {

class GetWeightedSumGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const bool grad_on_w = ArgumentHelper(Def()).GetSingle<bool>("grad_on_w", false);
    DOPPIO_ENFORCE(!grad_on_w || I(0) != O(0), "op WeightedSum: cannot differentiate the "
                   "weights of WeightedSum computed in place over '", O(0),
                   "': the weight gradient needs X_0");
    std::vector<std::string> inputs = {GO(0)};
    std::vector<std::string> outputs;
    for (int i = 0; i < Def().input_size(); i += 2) {
      inputs.push_back(I(i));
      inputs.push_back(I(i + 1));
      outputs.push_back(GI(i));
    }
    if (grad_on_w) {
      for (int i = 1; i < Def().input_size(); i += 2) outputs.push_back(GI(i));
    }
    return SingleGradientDef("WeightedSumGradient", "", inputs, outputs, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(WeightedSum, GetWeightedSumGradient);
SHOULD_NOT_DO_GRADIENT(WeightedSumGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
