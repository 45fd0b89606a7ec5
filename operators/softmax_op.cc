#include "operators/softmax_op.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

template <typename T>
void SoftmaxRows(int64_t rows, int64_t cols, const T* x, T* y, bool log_output) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    // Shifting by the row max keeps exp from overflowing.
    T max_value = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < cols; ++c) max_value = std::max(max_value, xr[c]);
    if (log_output) {
      T sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(xr[c] - max_value);
      const T log_sum = std::log(sum);
      for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] - max_value - log_sum;
    } else {
      T sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        yr[c] = std::exp(xr[c] - max_value);
        sum += yr[c];
      }
      const T inverse = T(1) / sum;
      for (int64_t c = 0; c < cols; ++c) yr[c] *= inverse;
    }
  }
}

template void SoftmaxRows<float>(int64_t, int64_t, const float*, float*, bool);
template void SoftmaxRows<double>(int64_t, int64_t, const double*, double*, bool);

RowsAndCols SplitAtAxis(const OperatorBase& op, const std::string& blob, const Tensor& tensor,
                        int axis) {
  const int ndim = tensor.ndim();
  DOPPIO_ENFORCE(axis >= -ndim && axis < ndim, "axis ", axis, " is out of range for '", blob,
                 "' of shape ", tensor.dims(), " (rank ", ndim, ")");
  const int canonical = axis < 0 ? axis + ndim : axis;
  return {tensor.SizeToDim(canonical), tensor.SizeFromDim(canonical)};
}

int ReadSoftmaxAxis(const OperatorBase& op) { return op.GetSingleArgument<int>("axis", 1); }

// ---- forward ----

template <bool kLog>
SoftmaxFamilyOp<kLog>::SoftmaxFamilyOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(ReadSoftmaxAxis(*this)) {}

template <bool kLog>
void SoftmaxFamilyOp<kLog>::RunOnDevice() {
  const Tensor& X = Input(0);
  activation::DispatchFloatLikeInput(*this, X, Output(0), [&](auto x, auto y, int64_t) {
    const RowsAndCols shape = SplitAtAxis(*this, input_name(0), X, axis_);
    SoftmaxRows(shape.rows, shape.cols, x, y, kLog);
  });
}

// ---- gradient ----

template <bool kLog>
SoftmaxFamilyGradientOp<kLog>::SoftmaxFamilyGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(ReadSoftmaxAxis(*this)) {}

template <bool kLog>
void SoftmaxFamilyGradientOp<kLog>::RunOnDevice() {
  const Tensor& Y = Input(0);
  const Tensor& dY = Input(1);
  activation::CheckGradientMatchesOutput(*this, Y, dY);
  DispatchTypes(FloatTypes{}, input_name(0), Y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const RowsAndCols shape = SplitAtAxis(*this, input_name(0), Y, axis_);
    const T* y = Y.data<T>();
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(Y.dims());
    T* dx = dX->template mutable_data<T>();
    for (int64_t r = 0; r < shape.rows; ++r) {
      const T* yr = y + r * shape.cols;
      const T* dyr = dy + r * shape.cols;
      T* dxr = dx + r * shape.cols;
      // The row sum is taken before dxr is written, so dX may alias dY.
      T sum = 0;
      if (kLog) {
        for (int64_t c = 0; c < shape.cols; ++c) sum += dyr[c];
        for (int64_t c = 0; c < shape.cols; ++c) dxr[c] = dyr[c] - std::exp(yr[c]) * sum;
      } else {
        for (int64_t c = 0; c < shape.cols; ++c) sum += dyr[c] * yr[c];
        for (int64_t c = 0; c < shape.cols; ++c) dxr[c] = yr[c] * (dyr[c] - sum);
      }
    }
  });
}

template class SoftmaxFamilyOp<false>;
template class SoftmaxFamilyOp<true>;
template class SoftmaxFamilyGradientOp<false>;
template class SoftmaxFamilyGradientOp<true>;

// ---- registration ----

REGISTER_CPU_OPERATOR(Softmax, SoftmaxOp);
REGISTER_CPU_OPERATOR(SoftmaxGradient, SoftmaxGradientOp);
REGISTER_CPU_OPERATOR(LogSoftmax, LogSoftmaxOp);
REGISTER_CPU_OPERATOR(LogSoftmaxGradient, LogSoftmaxGradientOp);

namespace {
constexpr const char kAxisDoc[] =
    "(int, default 1) dims before `axis` index rows, dims from `axis` on are "
    "normalized together";
}  // namespace

OPERATOR_SCHEMA(Softmax).LowPrecisionInFloat32()
    .NumInputs(1)
    .CostInferenceFunction(CostInferenceForSoftmax)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Arg("axis", kAxisDoc)
    .Input(0, "X", "input tensor, float32 or float64, seen as a 2-D matrix split at axis")
    .Output(0, "Y", "softmax of each row, of X's shape and type")
    .Doc("Y[r, :] = exp(X[r, :]) / sum(exp(X[r, :])) with X coerced to 2-D at `axis`.");

OPERATOR_SCHEMA(SoftmaxGradient).LowPrecisionInFloat32()
    .NumInputs(2)
    .CostInferenceFunction(PointwiseCostInference(3))
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Arg("axis", kAxisDoc)
    .Input(0, "Y", "Softmax's output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X: Y * (dY - sum_row(dY * Y))")
    .Doc("Gradient of Softmax.");

OPERATOR_SCHEMA(LogSoftmax)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Arg("axis", kAxisDoc)
    .Input(0, "X", "input tensor, float32 or float64, seen as a 2-D matrix split at axis")
    .Output(0, "Y", "log of the softmax of each row, of X's shape and type")
    .Doc("Y[r, :] = X[r, :] - log(sum(exp(X[r, :]))) with X coerced to 2-D at `axis` "
         "(ONNX LogSoftmax before opset 13; Caffe2 had no such op).");

OPERATOR_SCHEMA(LogSoftmaxGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Arg("axis", kAxisDoc)
    .Input(0, "Y", "LogSoftmax's output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X: dY - exp(Y) * sum_row(dY)")
    .Doc("Gradient of LogSoftmax.");

REGISTER_GRADIENT(Softmax, GetGradientFromOutput);
REGISTER_GRADIENT(LogSoftmax, GetGradientFromOutput);
SHOULD_NOT_DO_GRADIENT(SoftmaxGradient,
                       "it is a gradient op; second derivatives are not supported");
SHOULD_NOT_DO_GRADIENT(LogSoftmaxGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
