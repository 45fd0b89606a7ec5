#include "operators/momentum_sgd_op.h"

#include <type_traits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_functors.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/parallel_for.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

// The update loop with its branches (nesterov, param) taken out of the
// loop, so `omp simd` can vectorize it (GCC's -O2 cost model leaves loops of
// unknown length scalar). Each element still goes through the CUDA kernel's
// double-precision step (elementwise_functors.h), so results are the same
// bits as the scalar loop. Outputs may alias their inputs: each element is
// read before it is written, and lanes touch distinct elements.
template <typename T, bool kNesterov, bool kUpdateParam>
inline __attribute__((always_inline)) void MomentumLoop(int64_t n, const T* grad,
                                                        const T* moment, T* new_grad,
                                                        T* new_moment, double lr,
                                                        double momentum, T* param) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    double m_new, step;
    functors::MomentumSgdStep(grad[i], moment[i], lr, momentum, kNesterov, &m_new, &step);
    new_moment[i] = static_cast<T>(m_new);
    new_grad[i] = static_cast<T>(step);
    if (kUpdateParam) param[i] = static_cast<T>(param[i] - step);
  }
}

template <typename T>
inline __attribute__((always_inline)) void MomentumLoops(int64_t n, const T* grad,
                                                         const T* moment, T* new_grad,
                                                         T* new_moment, double lr,
                                                         double momentum, bool nesterov,
                                                         T* param) {
  if (nesterov) {
    if (param != nullptr) {
      MomentumLoop<T, true, true>(n, grad, moment, new_grad, new_moment, lr, momentum, param);
    } else {
      MomentumLoop<T, true, false>(n, grad, moment, new_grad, new_moment, lr, momentum, param);
    }
  } else if (param != nullptr) {
    MomentumLoop<T, false, true>(n, grad, moment, new_grad, new_moment, lr, momentum, param);
  } else {
    MomentumLoop<T, false, false>(n, grad, moment, new_grad, new_moment, lr, momentum, param);
  }
}

// float, every training net's case, is built for AVX2 and for baseline
// x86-64 (picked at load time, as in spatial_batch_norm_op.cc; neither has
// FMA, so both give the same bits): the update of a 784x256 weight took
// ~290 us scalar, ~100 us with AVX2. Not under ThreadSanitizer (clone
// resolvers run before its runtime is up) nor clang (the fuzz build).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_THREAD__)
#define DOPPIO_MOMENTUM_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DOPPIO_MOMENTUM_VECTOR_CLONES
#endif

DOPPIO_MOMENTUM_VECTOR_CLONES
void MomentumUpdateFloat(int64_t n, const float* grad, const float* moment, float* new_grad,
                         float* new_moment, double lr, double momentum, bool nesterov,
                         float* param) {
  MomentumLoops<float>(n, grad, moment, new_grad, new_moment, lr, momentum, nesterov, param);
}

// n elements of the update; `param` may be null (MomentumSGD).
template <typename T>
void MomentumUpdate(int64_t n, const T* grad, const T* moment, T* new_grad, T* new_moment,
                    double lr, double momentum, bool nesterov, T* param) {
  if constexpr (std::is_same_v<T, float>) {
    MomentumUpdateFloat(n, grad, moment, new_grad, new_moment, lr, momentum, nesterov, param);
  } else {
    MomentumLoops<T>(n, grad, moment, new_grad, new_moment, lr, momentum, nesterov, param);
  }
}

// Inputs 0 (grad) and 1 (moment) of the dense ops agree in size and type.
void CheckGradAndMoment(const OperatorBase& op, const Tensor& grad, const Tensor& moment) {
  EnforceSameSizeAndType(op, 0, grad, 1, moment);
}

}  // namespace

MomentumSGDOpBase::MomentumSGDOpBase(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadMomentumSGDArgs(*this)) {}

template <typename T>
void MomentumSGDOpBase::DenseStep(const Tensor& grad, const Tensor& moment, double lr,
                                  T* param) {
  Tensor* new_grad = Output(0);
  Tensor* new_moment = Output(1);
  new_grad->Resize(grad.dims());
  new_moment->Resize(moment.dims());
  const T* g = grad.data<T>();
  const T* m = moment.data<T>();
  T* new_g = new_grad->mutable_data<T>();
  T* new_m = new_moment->mutable_data<T>();
  // Pointwise, so split across the intra-op threads with the same bits.
  ParallelFor(grad.numel(), [&](int64_t begin, int64_t end) {
    MomentumUpdate<T>(end - begin, g + begin, m + begin, new_g + begin, new_m + begin, lr,
                      args_.momentum, args_.nesterov, param == nullptr ? nullptr : param + begin);
  });
}

// ---- MomentumSGD ----

void MomentumSGDOp::RunOnDevice() {
  const Tensor& grad = Input(0);
  const Tensor& moment = Input(1);
  CheckGradAndMoment(*this, grad, moment);
  const double lr = ReadLearningRate(*this, 2, Input(2));
  DispatchTypes(FloatTypes{}, input_name(0), grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    DenseStep<T>(grad, moment, lr, nullptr);
  });
}

// ---- MomentumSGDUpdate ----

void MomentumSGDUpdateOp::RunOnDevice() {
  const Tensor& grad = Input(0);
  const Tensor& moment = Input(1);
  const Tensor& param = Input(3);
  CheckGradAndMoment(*this, grad, moment);
  EnforceSameSizeAndType(*this, 0, grad, 3, param);
  const double lr = ReadLearningRate(*this, 2, Input(2));
  DispatchTypes(FloatTypes{}, input_name(0), grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Out of place the new parameter starts as a copy (Caffe2 leaves it
    // unset, which only works in place).
    Tensor* new_param = Output(2);
    if (!IsInputOutputAlias(3, 2)) new_param->CopyFrom(param);
    DenseStep<T>(grad, moment, lr, new_param->mutable_data<T>());
  });
}

// ---- SparseMomentumSGDUpdate ----

void SparseMomentumSGDUpdateOp::RunOnDevice() {
  const Tensor& grad = Input(0);
  const Tensor& moment = Input(1);
  const Tensor& param = Input(3);
  const Tensor& indices = Input(4);
  EnforceSameSizeAndType(*this, 3, param, 1, moment);
  EnforceSameType(*this, 3, param, 0, grad);
  EnforceHasRows(*this, 3, param);
  const double lr = ReadLearningRate(*this, 2, Input(2));
  const int64_t rows = param.dim(0);
  const int64_t row_size = param.SizeFromDim(1);
  const int64_t count = indices.numel();
  DOPPIO_ENFORCE(grad.numel() == count * row_size, "'", input_name(0), "' has ", grad.numel(),
                 " elements (shape ", grad.dims(), ") but ", count, " indices in '", input_name(4),
                 "' times rows of ", row_size, " elements of '", input_name(3), "' need ",
                 count * row_size);

  DispatchInput(IndexTypes{}, *this, 4, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckIndicesInRange(*this, 4, index, count, rows, 3);
    DispatchTypes(FloatTypes{}, input_name(3), param.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor* new_grad = Output(0);
      new_grad->Resize(grad.dims());
      const T* g = grad.data<T>();
      T* ng = new_grad->mutable_data<T>();
      // Outputs 1 and 2 are moment and param themselves (EnforceInplace).
      T* m = Output(1)->mutable_data<T>();
      T* w = Output(2)->mutable_data<T>();
      // Row by row in order: a repeated index sees the earlier update.
      for (int64_t k = 0; k < count; ++k) {
        const int64_t offset = static_cast<int64_t>(index[k]) * row_size;
        MomentumUpdate<T>(row_size, g + k * row_size, m + offset, ng + k * row_size, m + offset, lr,
                          args_.momentum, args_.nesterov, w + offset);
      }
    });
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(MomentumSGD, MomentumSGDOp);
REGISTER_CPU_OPERATOR(MomentumSGDUpdate, MomentumSGDUpdateOp);
REGISTER_CPU_OPERATOR(SparseMomentumSGDUpdate, SparseMomentumSGDUpdateOp);

namespace {

void MomentumArgs(OpSchema& schema) {
  schema.Arg("momentum", "(float, default 0) the momentum mu")
      .Arg("nesterov", "(bool, default 0) use Nesterov's accelerated gradient");
}

// Outputs take the shapes and types of the given inputs.
OpSchema::InferenceFunction SameAsInputs(std::vector<int> inputs) {
  return [inputs](const OperatorDef&, const std::vector<TensorShape>& in) {
    std::vector<TensorShape> out;
    for (int i : inputs) out.push_back(in[i]);
    return out;
  };
}

}  // namespace

OPERATOR_SCHEMA(MomentumSGD)
    .Elementwise()
    .NumInputs(3)
    .NumOutputs(2)
    .AllowInplace({{0, 0}, {1, 1}})
    .TensorInferenceFunction(SameAsInputs({0, 1}))
    .Apply(MomentumArgs)
    .Input(0, "grad", "gradient, float32 or float64")
    .Input(1, "moment", "momentum history, grad's size and type")
    .Input(2, "lr", "learning rate, one element")
    .Output(0, "output_grad", "the step: lr*g + mu*m (nesterov: (1+mu)*m' - mu*m)")
    .Output(1, "output_moment", "the new momentum m'")
    .Doc("Momentum SGD step without the parameter update: returns (step, m').");

OPERATOR_SCHEMA(MomentumSGDUpdate)
    .Elementwise()
    .NumInputs(4)
    .NumOutputs(3)
    .AllowInplace({{0, 0}, {1, 1}, {3, 2}})
    .TensorInferenceFunction(SameAsInputs({0, 1, 3}))
    .Apply(MomentumArgs)
    .Input(0, "grad", "gradient, float32 or float64")
    .Input(1, "moment", "momentum history, grad's size and type")
    .Input(2, "lr", "learning rate, one element (positive: the step is subtracted)")
    .Input(3, "param", "parameter, grad's size and type")
    .Output(0, "output_grad", "the step")
    .Output(1, "output_moment", "the new momentum")
    .Output(2, "output_param", "param - step")
    .Doc("Momentum SGD: m' = lr*g + mu*m, param -= m' (nesterov: m' = mu*m + lr*g, "
         "param -= (1+mu)*m' - mu*m). Returns (step, m', param).");

OPERATOR_SCHEMA(SparseMomentumSGDUpdate)
    .NumInputs(5)
    .NumOutputs(3)
    .AllowInplace({{0, 0}})
    .EnforceInplace({{1, 1}, {3, 2}})
    .TensorInferenceFunction(SameAsInputs({0, 1, 3}))
    .Apply(MomentumArgs)
    .Input(0, "grad", "GradientSlice values: one row of param per index")
    .Input(1, "moment", "momentum, param's size (updated in place)")
    .Input(2, "lr", "learning rate, one element")
    .Input(3, "param", "full parameter, rank >= 1 (updated in place)")
    .Input(4, "indices", "int32 or int64 rows of param to update")
    .Output(0, "output_grad", "the step of each indexed row")
    .Output(1, "output_moment", "moment, updated at the indexed rows")
    .Output(2, "output_param", "param, updated at the indexed rows")
    .Doc("MomentumSGDUpdate on the rows `indices` of param and moment only; repeated "
         "indices are applied one after the other.");

SHOULD_NOT_DO_GRADIENT(MomentumSGD, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(MomentumSGDUpdate, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(SparseMomentumSGDUpdate,
                       "it is a parameter update, not part of the model");

}  // namespace doppio
