#include "operators/adagrad_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/sparse_functors.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

// One element of the update: the functor the CUDA kernels run too
// (sparse_functors.h).
struct AdagradResult {
  double moment;
  double effective_lr;
  double update;
};

inline AdagradResult Adagrad(double grad, double moment, double lr, double epsilon,
                             double decay) {
  AdagradResult result;
  result.update = functors::AdagradStep{epsilon, decay}(grad, moment, lr, &result.moment,
                                                         &result.effective_lr);
  return result;
}

}  // namespace

// ---- Adagrad ----

AdagradOp::AdagradOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadAdagradArgs(*this)) {}

void AdagradOp::RunOnDevice() {
  const Tensor& param = Input(0);
  const Tensor& moment = Input(1);
  const Tensor& grad = Input(2);
  EnforceSameSizeAndType(*this, 0, param, 1, moment);
  EnforceSameSizeAndType(*this, 0, param, 2, grad);
  const double lr = ReadLearningRate(*this, 3, Input(3));

  DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = param.data<T>();
    const T* h = moment.data<T>();
    const T* g = grad.data<T>();
    Tensor* new_param = Output(0);
    Tensor* new_moment = Output(1);
    new_param->Resize(param.dims());
    new_moment->Resize(moment.dims());
    T* nw = new_param->mutable_data<T>();
    T* nh = new_moment->mutable_data<T>();
    T* effective_lr = nullptr;
    T* update = nullptr;
    if (OutputSize() > 2) {
      Output(2)->Resize(grad.dims());
      effective_lr = Output(2)->mutable_data<T>();
    }
    if (OutputSize() > 3) {
      Output(3)->Resize(grad.dims());
      update = Output(3)->mutable_data<T>();
    }
    for (int64_t i = 0; i < param.numel(); ++i) {
      const AdagradResult step = Adagrad(g[i], h[i], lr, args_.epsilon, args_.decay);
      nw[i] = static_cast<T>(w[i] + step.update);
      nh[i] = static_cast<T>(step.moment);
      if (effective_lr != nullptr) effective_lr[i] = static_cast<T>(step.effective_lr);
      if (update != nullptr) update[i] = static_cast<T>(step.update);
    }
  });
}

// ---- SparseAdagrad ----

SparseAdagradOp::SparseAdagradOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      args_(ReadAdagradArgs(*this)),
      row_wise_(def.type() == "RowWiseSparseAdagrad") {}

template <typename T>
void SparseAdagradOp::UpdateRow(int64_t row, int64_t row_size, const T* g, double lr, T* w,
                                T* h) const {
  w += row * row_size;
  if (!row_wise_) {
    h += row * row_size;
    for (int64_t j = 0; j < row_size; ++j) {
      const AdagradResult step = Adagrad(g[j], h[j], lr, args_.epsilon, 1.0);
      h[j] = static_cast<T>(step.moment);
      w[j] = static_cast<T>(w[j] + step.update);
    }
    return;
  }
  const double mean_square = RowMeanSquare(g, row_size);
  h[row] = static_cast<T>(h[row] + mean_square);
  const double rate = lr / (std::sqrt(static_cast<double>(h[row])) + args_.epsilon);
  for (int64_t j = 0; j < row_size; ++j) w[j] = static_cast<T>(w[j] + rate * g[j]);
}

void SparseAdagradOp::RunOnDevice() {
  const Tensor& param = Input(0);
  const Tensor& moment = Input(1);
  const Tensor& indices = Input(2);
  const Tensor& grad = Input(3);
  EnforceHasRows(*this, 0, param);
  if (row_wise_) {
    EnforceSameType(*this, 0, param, 1, moment);
    DOPPIO_ENFORCE(moment.numel() == param.dim(0), "moment '", input_name(1), "' has ",
                   moment.numel(), " elements but '", input_name(0), "' has ", param.dim(0),
                   " rows: a row-wise moment holds one value per row");
  } else {
    EnforceSameSizeAndType(*this, 0, param, 1, moment);
  }
  EnforceSameType(*this, 0, param, 3, grad);
  const double lr = ReadLearningRate(*this, 4, Input(4));
  const int64_t rows = param.dim(0);
  const int64_t row_size = param.SizeFromDim(1);
  const int64_t count = indices.numel();
  DOPPIO_ENFORCE(grad.numel() == count * row_size, "'", input_name(3), "' has ", grad.numel(),
                 " elements (shape ", grad.dims(), ") but ", count, " indices in '", input_name(2),
                 "' times rows of ", row_size, " elements of '", input_name(0), "' need ",
                 count * row_size);

  DispatchInput(IndexTypes{}, *this, 2, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckIndicesInRange(*this, 2, index, count, rows, 0);
    DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* g = grad.data<T>();
      // Outputs 0 and 1 are param and moment themselves (EnforceInplace).
      T* w = Output(0)->mutable_data<T>();
      T* h = Output(1)->mutable_data<T>();
      // In order: a repeated index sees the earlier update.
      for (int64_t k = 0; k < count; ++k) {
        UpdateRow(static_cast<int64_t>(index[k]), row_size, g + k * row_size, lr, w, h);
      }
    });
  });
}

REGISTER_CPU_OPERATOR(Adagrad, AdagradOp);
REGISTER_CPU_OPERATOR(SparseAdagrad, SparseAdagradOp);
REGISTER_CPU_OPERATOR(RowWiseSparseAdagrad, SparseAdagradOp);

OPERATOR_SCHEMA(Adagrad)
    .Elementwise()
    .NumInputs(4)
    .NumOutputs(2, 4)
    .AllowInplace({{0, 0}, {1, 1}})
    .Arg("epsilon", "(float, default 1e-5) added to sqrt of the moment")
    .Arg("decay", "(float, default 1) decay of the squared-gradient sum")
    .Input(0, "param", "parameters, float32 or float64")
    .Input(1, "moment", "sum of squared gradients, param's size and type")
    .Input(2, "grad", "gradient, param's size and type")
    .Input(3, "lr", "learning rate, one element (negative for descent)")
    .Output(0, "output_param", "param + update")
    .Output(1, "output_moment", "decay * moment + grad^2")
    .Output(2, "output_effective_lr", "(optional) lr / (sqrt(moment') + epsilon)")
    .Output(3, "output_update", "(optional) effective_lr * grad, the applied update")
    .Doc("AdaGrad: moment' = decay*moment + g^2, param += lr*g/(sqrt(moment')+epsilon).");

OPERATOR_SCHEMA(SparseAdagrad)
    .NumInputs(5)
    .NumOutputs(2)
    .EnforceInplace({{0, 0}, {1, 1}})
    .Arg("epsilon", "(float, default 1e-5) added to sqrt of the moment")
    .Input(0, "param", "full parameter, rank >= 1 (updated in place)")
    .Input(1, "moment", "param's size and type (updated in place)")
    .Input(2, "indices", "int32 or int64 rows of param to update")
    .Input(3, "grad", "one row of param per index")
    .Input(4, "lr", "learning rate, one element")
    .Output(0, "output_param", "param, updated at the indexed rows")
    .Output(1, "output_moment_1", "moment, updated at the indexed rows")
    .Doc("Adagrad (decay 1) on the rows `indices` of param and moment; repeated indices "
         "are applied one after the other.");

OPERATOR_SCHEMA(RowWiseSparseAdagrad)
    .NumInputs(5)
    .NumOutputs(2)
    .EnforceInplace({{0, 0}, {1, 1}})
    .Arg("epsilon", "(float, default 1e-5) added to sqrt of the moment")
    .Input(0, "param", "full parameter, rank >= 1 (updated in place)")
    .Input(1, "moment", "one value per row of param, param's type (updated in place)")
    .Input(2, "indices", "int32 or int64 rows of param to update")
    .Input(3, "grad", "one row of param per index")
    .Input(4, "lr", "learning rate, one element")
    .Output(0, "output_param", "param, updated at the indexed rows")
    .Output(1, "output_moment_1", "moment, updated at the indexed rows")
    .Doc(
        "Row-wise Adagrad on the rows `indices`: moment[i] += mean(g_i^2), row i += "
        "lr * g_i / (sqrt(moment[i]) + epsilon); repeated indices apply in turn. One "
        "moment per row instead of per element.");

SHOULD_NOT_DO_GRADIENT(Adagrad, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(SparseAdagrad, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(RowWiseSparseAdagrad, "it is a parameter update, not part of the model");

}  // namespace doppio
