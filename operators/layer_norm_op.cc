// LayerNorm and LayerNormGradient (InstanceNorm is in instance_norm_op.cc).
#include "operators/layer_norm_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

namespace {

// The [M, N] split of X at `axis`, with a clear error for a bad axis.
struct RowSplit {
  int axis = 0;
  int64_t rows = 0;  // M
  int64_t cols = 0;  // N
};

RowSplit SplitAt(const OperatorBase& op, int input, const Tensor& X, int axis) {
  const int ndim = X.ndim();
  DOPPIO_ENFORCE(ndim >= 1, "input '", op.input_name(input),
                 "' is a scalar; it needs rank 1 or more");
  DOPPIO_ENFORCE(axis >= -ndim && axis < ndim, "axis ", axis, " is out of range for input '",
                 op.input_name(input), "' of shape ", X.dims());
  RowSplit split;
  split.axis = axis < 0 ? axis + ndim : axis;
  split.rows = X.SizeToDim(split.axis);
  split.cols = X.SizeFromDim(split.axis);
  return split;
}

// X.dims[:axis] + [1]: the shape of LayerNorm's mean and std.
std::vector<int64_t> StatisticDims(const std::vector<int64_t>& dims, int axis) {
  std::vector<int64_t> out(dims.begin(), dims.begin() + axis);
  out.push_back(1);
  return out;
}

}  // namespace

// ---- LayerNorm ----

LayerNormOp::LayerNormOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      axis_(GetSingleArgument<int>("axis", 1)),
      epsilon_(GetSingleArgument<float>("epsilon", 1e-5f)),
      elementwise_affine_(GetSingleArgument<bool>("elementwise_affine", false)) {
  DOPPIO_ENFORCE(epsilon_ >= 0, "argument 'epsilon' is ", epsilon_, "; it must not be negative");
  DOPPIO_ENFORCE(InputSize() == (elementwise_affine_ ? 3 : 1), "with ",
                 "elementwise_affine=", elementwise_affine_ ? 1 : 0, " it takes ",
                 elementwise_affine_ ? "3 inputs (X, gamma, beta)" : "1 input (X)", ", got ",
                 InputSize());
}

void LayerNormOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void LayerNormOp::Run() {
  const Tensor& X = Input(0);
  const RowSplit split = SplitAt(*this, 0, X, axis_);
  const int64_t M = split.rows, N = split.cols;
  const T* gamma = nullptr;
  const T* beta = nullptr;
  if (elementwise_affine_) {
    CheckParameter(*this, 1, Input(1), N, X.dtype(), "gamma");
    CheckParameter(*this, 2, Input(2), N, X.dtype(), "beta");
    gamma = Input(1).data<T>();
    beta = Input(2).data<T>();
  }
  const T* x = X.data<T>();
  Tensor* Y = Output(0);
  Tensor* mean = Output(1);
  Tensor* stddev = Output(2);
  Y->Resize(X.dims());
  mean->Resize(StatisticDims(X.dims(), split.axis));
  stddev->Resize(StatisticDims(X.dims(), split.axis));
  T* y = Y->mutable_data<T>();
  T* mean_data = mean->mutable_data<T>();
  T* std_data = stddev->mutable_data<T>();
  // Rows are independent (and each is read before it is written, so Y may
  // be X): split over the intra-op threads, any split gives the same bits.
  const double epsilon = epsilon_;
  ParallelFor(
      M,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const T* xr = x + row * N;
          T* yr = y + row * N;
          double mu = 0;
          for (int64_t j = 0; j < N; ++j) mu += xr[j];
          mu = N > 0 ? mu / N : 0.0;
          double var = 0;
          for (int64_t j = 0; j < N; ++j) var += (xr[j] - mu) * (xr[j] - mu);
          var = N > 0 ? var / N : 0.0;
          const double sigma = std::sqrt(var + epsilon);
          const double inv_sigma = 1.0 / sigma;
          mean_data[row] = static_cast<T>(mu);
          std_data[row] = static_cast<T>(sigma);
          for (int64_t j = 0; j < N; ++j) {
            const double normalized = (xr[j] - mu) * inv_sigma;
            yr[j] = static_cast<T>(gamma ? normalized * gamma[j] + beta[j] : normalized);
          }
        }
      },
      RowsPerThread(N));
}

// ---- LayerNormGradient ----

LayerNormGradientOp::LayerNormGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 1)) {
  const bool affine = InputSize() == 6;
  DOPPIO_ENFORCE(OutputSize() == (affine ? 3 : 1), "with ", InputSize(), " inputs it has ",
                 affine ? "3 outputs (dX, dgamma, dbeta)" : "1 output (dX)", ", got ",
                 OutputSize());
}

void LayerNormGradientOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 4, Input(4).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void LayerNormGradientOp::Run() {
  const Tensor& dY = Input(0);
  const Tensor& X = Input(4);
  const RowSplit split = SplitAt(*this, 4, X, axis_);
  const int64_t M = split.rows, N = split.cols;
  DOPPIO_ENFORCE(dY.dims() == X.dims() && dY.dtype() == X.dtype(), "gradient '", input_name(0),
                 "' is ", dY.DebugString(), " but '", input_name(4), "' is ", X.DebugString());
  CheckParameter(*this, 2, Input(2), M, X.dtype(), "mean");
  CheckParameter(*this, 3, Input(3), M, X.dtype(), "std");
  const bool affine = InputSize() == 6;
  const T* gamma = nullptr;
  if (affine) {
    CheckParameter(*this, 5, Input(5), N, X.dtype(), "gamma");
    gamma = Input(5).data<T>();
  }
  const T* x = X.data<T>();
  const T* dy = dY.data<T>();
  const T* mean = Input(2).data<T>();
  const T* stddev = Input(3).data<T>();
  std::vector<double> dgamma(affine ? N : 0, 0.0), dbeta(affine ? N : 0, 0.0);
  std::vector<double> g(N), normalized(N);
  Tensor* dX = Output(0);
  dX->Resize(X.dims());
  T* dx = dX->mutable_data<T>();
  // With xhat = (x - mean) / std and g = dY (* gamma), per row:
  //   dX = (g - mean(g) - xhat * mean(g * xhat)) / std.
  for (int64_t row = 0; row < M; ++row) {
    const T* xr = x + row * N;
    const T* dyr = dy + row * N;
    const double inv_sigma = 1.0 / stddev[row];
    double mean_g = 0, mean_gx = 0;
    for (int64_t j = 0; j < N; ++j) {
      normalized[j] = (xr[j] - mean[row]) * inv_sigma;
      g[j] = gamma ? dyr[j] * static_cast<double>(gamma[j]) : dyr[j];
      mean_g += g[j];
      mean_gx += g[j] * normalized[j];
      if (affine) {
        dgamma[j] += dyr[j] * normalized[j];
        dbeta[j] += dyr[j];
      }
    }
    mean_g /= N;
    mean_gx /= N;
    T* dxr = dx + row * N;
    for (int64_t j = 0; j < N; ++j) {
      dxr[j] = static_cast<T>((g[j] - mean_g - normalized[j] * mean_gx) * inv_sigma);
    }
  }
  if (affine) {
    for (int k = 1; k <= 2; ++k) {
      Tensor* out = Output(k);
      out->Resize(Input(5).dims());
      T* data = out->mutable_data<T>();
      const std::vector<double>& values = k == 1 ? dgamma : dbeta;
      for (int64_t j = 0; j < N; ++j) data[j] = static_cast<T>(values[j]);
    }
  }
}

// ---- registration ----

REGISTER_CPU_OPERATOR(LayerNorm, LayerNormOp);
REGISTER_CPU_OPERATOR(LayerNormGradient, LayerNormGradientOp);

OPERATOR_SCHEMA(LayerNorm)
    .NumInputs(std::set<int>{1, 3})
    .NumOutputs(3)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const TensorShape& X = in.at(0);
      const int ndim = X.dims_size();
      int axis = ArgumentHelper(def).GetSingle<int>("axis", 1);
      if (axis < 0) axis += ndim;
      TensorShape stat;
      stat.set_data_type(X.data_type());
      if (axis < 0 || axis >= ndim) {
        stat.set_unknown_shape(true);
      } else {
        for (int i = 0; i < axis; ++i) stat.add_dims(X.dims(i));
        stat.add_dims(1);
      }
      return std::vector<TensorShape>{X, stat, stat};
    })
    .Arg("axis", "(int, default 1) the first dim of each normalized row; negative counts "
                 "from the end")
    .Arg("epsilon", "(float, default 1e-5) added to the variance before the square root")
    .Arg("elementwise_affine", "(bool, default 0) 1: Y = gamma * normalized + beta")
    .Input(0, "input", "tensor to normalize (float32 or float64)")
    .Input(1, "gamma", "(elementwise_affine) scale, one per element of a row")
    .Input(2, "beta", "(elementwise_affine) shift, one per element of a row")
    .Output(0, "output", "the normalized input, of its shape")
    .Output(1, "mean", "mean of each row, shape input.dims[:axis] + [1]")
    .Output(2, "stddev", "sqrt(variance + epsilon) of each row, same shape as mean")
    .Doc("Layer normalization (https://arxiv.org/abs/1607.06450) over the dims from "
         "`axis` on: each row is shifted to mean 0 and divided by sqrt(var + epsilon).");

OPERATOR_SCHEMA(LayerNormGradient)
    .NumInputs(5, 6)
    .NumOutputs(std::set<int>{1, 3})
    .Arg("axis", "(int, default 1) LayerNorm's axis")
    .Input(0, "dY", "gradient of LayerNorm's output")
    .Input(1, "Y", "LayerNorm's output")
    .Input(2, "mean", "LayerNorm's mean output")
    .Input(3, "stddev", "LayerNorm's stddev output")
    .Input(4, "input", "LayerNorm's input")
    .Input(5, "gamma", "(elementwise_affine) LayerNorm's gamma")
    .Output(0, "dX", "gradient of the input")
    .Output(1, "dgamma", "(elementwise_affine) gradient of gamma")
    .Output(2, "dbeta", "(elementwise_affine) gradient of beta")
    .Doc("Gradient of LayerNorm.");

namespace {

class GetLayerNormGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const bool affine = ArgumentHelper(Def()).GetSingle<bool>("elementwise_affine", false);
    if (affine) {
      return SingleGradientDef("LayerNormGradient", "", {GO(0), O(0), O(1), O(2), I(0), I(1)},
                               {GI(0), GI(1), GI(2)}, Def().arg());
    }
    return SingleGradientDef("LayerNormGradient", "", {GO(0), O(0), O(1), O(2), I(0)},
                             {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(LayerNorm, GetLayerNormGradient);
SHOULD_NOT_DO_GRADIENT(LayerNormGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
