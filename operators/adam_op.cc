#include "operators/adam_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_functors.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

AdamOp::AdamOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadAdamArgs(*this)) {}

void AdamOp::RunOnDevice() {
  const Tensor& param = Input(0);
  const Tensor& moment_1 = Input(1);
  const Tensor& moment_2 = Input(2);
  const Tensor& grad = Input(3);
  EnforceSameSizeAndType(*this, 0, param, 1, moment_1);
  EnforceSameSizeAndType(*this, 0, param, 2, moment_2);
  EnforceSameSizeAndType(*this, 0, param, 3, grad);
  const double lr = ReadLearningRate(*this, 4, Input(4));
  const int64_t iteration = ReadIteration(*this, 5, Input(5));
  const double beta1 = args_.beta1, beta2 = args_.beta2, epsilon = args_.epsilon;
  const double correction = args_.Correction(iteration);

  DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = param.data<T>();
    const T* m1 = moment_1.data<T>();
    const T* m2 = moment_2.data<T>();
    const T* g = grad.data<T>();
    Tensor* outputs[3] = {Output(0), Output(1), Output(2)};
    outputs[0]->Resize(param.dims());
    outputs[1]->Resize(moment_1.dims());
    outputs[2]->Resize(moment_2.dims());
    T* new_w = outputs[0]->mutable_data<T>();
    T* new_m1 = outputs[1]->mutable_data<T>();
    T* new_m2 = outputs[2]->mutable_data<T>();
    T* step_out = nullptr;
    if (OutputSize() > 3) {
      Tensor* step = Output(3);
      step->Resize(grad.dims());
      step_out = step->mutable_data<T>();
    }
    // The step the CUDA kernel takes (elementwise_functors.h).
    const functors::AdamStep adam{beta1, beta2, epsilon, correction};
    for (int64_t i = 0; i < param.numel(); ++i) {
      double m, v;
      const double step = adam(g[i], m1[i], m2[i], &m, &v);
      new_w[i] = static_cast<T>(w[i] + lr * step);
      new_m1[i] = static_cast<T>(m);
      new_m2[i] = static_cast<T>(v);
      if (step_out != nullptr) step_out[i] = static_cast<T>(step);
    }
  });
}

SparseAdamOp::SparseAdamOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      args_(ReadAdamArgs(*this)),
      row_wise_(def.type() == "RowWiseSparseAdam") {}

void SparseAdamOp::CheckInputs() const {
  const Tensor& param = Input(0);
  EnforceHasRows(*this, 0, param);
  EnforceSameSizeAndType(*this, 0, param, 1, Input(1));
  if (row_wise_) {
    EnforceSameType(*this, 0, param, 2, Input(2));
    DOPPIO_ENFORCE(Input(2).numel() == param.dim(0), "moment_2 '", input_name(2), "' has ",
                   Input(2).numel(), " elements but '", input_name(0), "' has ", param.dim(0),
                   " rows: a row-wise moment holds one value per row");
  } else {
    EnforceSameSizeAndType(*this, 0, param, 2, Input(2));
  }
  EnforceSameType(*this, 0, param, 4, Input(4));
  const int64_t row_size = param.SizeFromDim(1);
  const int64_t count = Input(3).numel();
  DOPPIO_ENFORCE(Input(4).numel() == count * row_size, "'", input_name(4), "' has ",
                 Input(4).numel(), " elements (shape ", Input(4).dims(), ") but ", count,
                 " indices in '", input_name(3), "' times rows of ", row_size, " elements of '",
                 input_name(0), "' need ", count * row_size);
}

template <typename T>
void SparseAdamOp::UpdateRow(int64_t row, int64_t row_size, const T* g, double lr,
                             double correction, T* w, T* m1, T* m2) const {
  w += row * row_size;
  m1 += row * row_size;
  if (!row_wise_) {
    m2 += row * row_size;
    const functors::AdamStep adam{args_.beta1, args_.beta2, args_.epsilon, correction};
    for (int64_t j = 0; j < row_size; ++j) {
      double m, v;
      const double step = adam(g[j], m1[j], m2[j], &m, &v);
      w[j] = static_cast<T>(w[j] + lr * step);
      m1[j] = static_cast<T>(m);
      m2[j] = static_cast<T>(v);
    }
    return;
  }
  const double mean_square = RowMeanSquare(g, row_size);
  m2[row] = static_cast<T>(args_.beta2 * m2[row] + (1.0 - args_.beta2) * mean_square);
  const double denominator = std::sqrt(static_cast<double>(m2[row])) + args_.epsilon;
  for (int64_t j = 0; j < row_size; ++j) {
    const double m = args_.beta1 * m1[j] + (1.0 - args_.beta1) * g[j];
    m1[j] = static_cast<T>(m);
    w[j] = static_cast<T>(w[j] + lr * correction * m / denominator);
  }
}

void SparseAdamOp::RunOnDevice() {
  CheckInputs();
  const Tensor& param = Input(0);
  const Tensor& indices = Input(3);
  const double lr = ReadLearningRate(*this, 5, Input(5));
  const double correction = args_.Correction(ReadIteration(*this, 6, Input(6)));
  const int64_t row_size = param.SizeFromDim(1);
  const int64_t count = indices.numel();
  DispatchInput(IndexTypes{}, *this, 3, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckIndicesInRange(*this, 3, index, count, param.dim(0), 0);
    DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* g = Input(4).data<T>();
      // Outputs 0-2 are the inputs themselves (EnforceInplace).
      T* w = Output(0)->mutable_data<T>();
      T* m1 = Output(1)->mutable_data<T>();
      T* m2 = Output(2)->mutable_data<T>();
      // In order: a repeated index sees the earlier update.
      for (int64_t k = 0; k < count; ++k) {
        UpdateRow(static_cast<int64_t>(index[k]), row_size, g + k * row_size, lr, correction, w, m1,
                  m2);
      }
    });
  });
}

REGISTER_CPU_OPERATOR(Adam, AdamOp);
REGISTER_CPU_OPERATOR(SparseAdam, SparseAdamOp);
REGISTER_CPU_OPERATOR(RowWiseSparseAdam, SparseAdamOp);

OPERATOR_SCHEMA(Adam)
    .Elementwise()
    .NumInputs(6)
    .NumOutputs(3, 4)
    .AllowInplace({{0, 0}, {1, 1}, {2, 2}})
    .Arg("beta1", "(float, default 0.9) decay of the first moment")
    .Arg("beta2", "(float, default 0.999) decay of the second moment")
    .Arg("epsilon", "(float, default 1e-5) added to sqrt of the second moment")
    .Input(0, "param", "parameters, float32 or float64")
    .Input(1, "moment_1", "first moment history, param's size and type")
    .Input(2, "moment_2", "second moment history, param's size and type")
    .Input(3, "grad", "gradient, param's size and type")
    .Input(4, "lr", "learning rate, one element (negative for descent)")
    .Input(5, "iter", "int64 iteration count, one element")
    .Output(0, "output_param", "param + lr * step")
    .Output(1, "output_moment_1", "updated first moment")
    .Output(2, "output_moment_2", "updated second moment")
    .Output(3, "output_grad", "(optional) the effective gradient `step`")
    .Doc("Adam update. With t = iter + 1: m1 = beta1*m1 + (1-beta1)*g, m2 = beta2*m2 + "
         "(1-beta2)*g^2, step = sqrt(1-beta2^t)/(1-beta1^t) * m1/(sqrt(m2)+epsilon), "
         "param += lr*step.");

namespace {

void SparseAdamSchema(OpSchema& schema) {
  schema.NumInputs(7)
      .NumOutputs(3)
      .EnforceInplace({{0, 0}, {1, 1}, {2, 2}})
      .Arg("beta1", "(float, default 0.9) decay of the first moment")
      .Arg("beta2", "(float, default 0.999) decay of the second moment")
      .Arg("epsilon", "(float, default 1e-5) added to sqrt of the second moment")
      .Input(0, "param", "full parameter, rank >= 1 (updated in place)")
      .Input(1, "moment_1", "first moment, param's size and type (updated in place)")
      .Input(3, "indices", "int32 or int64 rows of param to update")
      .Input(4, "grad", "one row of param per index")
      .Input(5, "lr", "learning rate, one element (negative for descent)")
      .Input(6, "iter", "int64 iteration count, one element")
      .Output(0, "output_param", "param, updated at the indexed rows")
      .Output(1, "output_moment_1", "moment_1, updated at the indexed rows")
      .Output(2, "output_moment_2", "moment_2, updated at the indexed rows");
}

}  // namespace

OPERATOR_SCHEMA(SparseAdam)
    .Apply(SparseAdamSchema)
    .Input(2, "moment_2", "second moment, param's size and type (updated in place)")
    .Doc(
        "Adam on the rows `indices` of param and its moments; repeated indices apply "
        "in turn.");

OPERATOR_SCHEMA(RowWiseSparseAdam)
    .Apply(SparseAdamSchema)
    .Input(2, "moment_2", "one second moment per row of param (updated in place)")
    .Doc(
        "SparseAdam with one second moment per row, which follows the row's mean "
        "g^2: m2[i] = beta2 m2[i] + (1 - beta2) mean(g_i^2).");

SHOULD_NOT_DO_GRADIENT(Adam, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(SparseAdam, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(RowWiseSparseAdam, "it is a parameter update, not part of the model");

}  // namespace doppio
