// CUDA SoftmaxWithLoss, SoftmaxWithLossGradient, AveragedLoss and
// AveragedLossGradient: the arguments and checks of the CPU ops
// (softmax_with_loss_op.h, loss_ops.h), the math of loss_functors.h through
// the kernels of loss_op_gpu.cu. Schemas and gradient makers are the CPU
// ops'.
//
// Label values live on the GPU; a label outside [0, D) (or a probability
// row that is no distribution) makes the loss and the gradients nan instead
// of an error, as the CUDA LabelCrossEntropy and Accuracy do: checking them
// on the host would stall the stream.
#include "operators/loss_op_gpu.h"

#include <cstdint>
#include <vector>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/op_type_dispatch.h"
#include "operators/softmax_with_loss_op.h"

namespace doppio {
namespace {

// Calls fn(targets) with the op's targets on the GPU: probability rows
// (label_prob) or int32/int64 class labels.
template <typename T, typename Fn>
void WithTargets(const OperatorBase& op, const SoftmaxLossArgs& args,
                 const functors::SoftmaxLossLayout& layout, const Tensor& labels,
                 const T* weights, Fn&& fn) {
  if (args.label_prob) {
    fn(functors::SoftmaxLossTargets<T, int32_t>{layout, nullptr, labels.data<T>(), weights,
                                                false});
    return;
  }
  switch (labels.dtype()) {
    case DataType::kInt32:
      return fn(functors::SoftmaxLossTargets<T, int32_t>{layout, labels.data<int32_t>(), nullptr,
                                                         weights, args.spatial});
    case DataType::kInt64:
      return fn(functors::SoftmaxLossTargets<T, int64_t>{layout, labels.data<int64_t>(), nullptr,
                                                         weights, args.spatial});
    default: break;
  }
  DOPPIO_THROW("labels '", op.input_name(1), "' hold ", DataTypeName(labels.dtype()),
               "; class labels must be int32 or int64");
}

// Inputs logits, labels, [weight_tensor]; outputs softmax and loss (a
// device scalar of the logits' type).
class CudaSoftmaxWithLossOp final : public Operator<CUDAContext> {
 public:
  CudaSoftmaxWithLossOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadSoftmaxLossArgs(*this)),
        scratch_(context_.device()) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& labels = Input(1);
    const Tensor* weights = InputSize() > 2 ? &Input(2) : nullptr;
    EnforceInputsOnDevice(*this, context_.device());
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const functors::SoftmaxLossLayout layout =
          CheckSoftmaxLossInputs(*this, args_, X, labels, weights, 2);
      const T* x = X.data<T>();
      const T* w = weights != nullptr ? weights->data<T>() : nullptr;
      scratch_.Resize({2 * layout.samples()});
      double* scratch = scratch_.mutable_data<double>();
      Tensor* P = Output(0);
      P->Resize(X.dims());
      T* p = P->template mutable_data<T>();
      Tensor* loss = Output(1);
      loss->Resize({});
      T* loss_value = loss->template mutable_data<T>();
      WithTargets<T>(*this, args_, layout, labels, w, [&](const auto& targets) {
        LaunchSoftmaxLossCuda(targets, x, args_.scale, p, scratch, loss_value,
                              context_.cuda_stream());
      });
    });
  }

 private:
  SoftmaxLossArgs args_;
  // Per-sample losses and weights; a member so steady-state runs allocate
  // nothing (the kernels of one run finish, in stream order, before the
  // next run's overwrite it).
  Tensor scratch_;
};

// Inputs X, labels, [weight_tensor], P, d_loss (a device scalar); output dX.
class CudaSoftmaxWithLossGradientOp final : public Operator<CUDAContext> {
 public:
  CudaSoftmaxWithLossGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(ReadSoftmaxLossArgs(*this)),
        scratch_(context_.device()) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& labels = Input(1);
    const Tensor* weights = InputSize() == 5 ? &Input(2) : nullptr;
    const int p_index = InputSize() - 2;
    const Tensor& P = Input(p_index);
    const Tensor& d_loss = Input(InputSize() - 1);
    EnforceInputsOnDevice(*this, context_.device());
    CheckSoftmaxLossGradientInputs(*this, X, P, p_index, d_loss);
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const functors::SoftmaxLossLayout layout =
          CheckSoftmaxLossInputs(*this, args_, X, labels, weights, 2);
      const T* p = P.data<T>();
      const T* dy = d_loss.data<T>();
      const T* w = weights != nullptr ? weights->data<T>() : nullptr;
      scratch_.Resize({layout.samples() + 1});
      double* scratch = scratch_.mutable_data<double>();
      Tensor* dX = Output(0);
      dX->Resize(X.dims());
      T* dx = dX->template mutable_data<T>();
      WithTargets<T>(*this, args_, layout, labels, w, [&](const auto& targets) {
        LaunchSoftmaxLossGradientCuda(targets, p, args_.scale, dy, scratch, dx,
                                      context_.cuda_stream());
      });
    });
  }

 private:
  SoftmaxLossArgs args_;
  // Counted weights, then the gradient's common factor.
  Tensor scratch_;
};

// Input X; output its mean, a device scalar of X's type.
class CudaAveragedLossOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceInputOnDevice(*this, 0, X, context_.device());
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      Tensor* Y = Output(0);
      Y->Resize({});
      LaunchAveragedLossCuda(X.numel(), x, Y->template mutable_data<T>(),
                             context_.cuda_stream());
    });
  }
};

// Inputs X and dY (one element on the GPU); output dX = dY / numel(X).
class CudaAveragedLossGradientOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dY = Input(1);
    EnforceInputOnDevice(*this, 1, dY, context_.device());
    DOPPIO_ENFORCE(dY.numel() == 1, "gradient '", input_name(1), "' has shape ", dY.dims(),
                   "; AveragedLoss's output is a scalar");
    DOPPIO_ENFORCE(dY.dtype() == X.dtype(), "'", input_name(1), "' holds ",
                   DataTypeName(dY.dtype()), " but '", input_name(0), "' holds ",
                   DataTypeName(X.dtype()));
    // Only X's shape is read, so X may live anywhere.
    const std::vector<int64_t> dims = X.dims();
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* dy = dY.data<T>();
      Tensor* dX = Output(0);
      dX->Resize(dims);
      LaunchAveragedLossGradientCuda(dX->numel(), dy, dX->template mutable_data<T>(),
                                     context_.cuda_stream());
    });
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(SoftmaxWithLoss, CudaSoftmaxWithLossOp);
REGISTER_CUDA_OPERATOR(SoftmaxWithLossGradient, CudaSoftmaxWithLossGradientOp);
REGISTER_CUDA_OPERATOR(SpatialSoftmaxWithLoss, CudaSoftmaxWithLossOp);
REGISTER_CUDA_OPERATOR(SpatialSoftmaxWithLossGradient, CudaSoftmaxWithLossGradientOp);
REGISTER_CUDA_OPERATOR(AveragedLoss, CudaAveragedLossOp);
REGISTER_CUDA_OPERATOR(AveragedLossGradient, CudaAveragedLossGradientOp);

}  // namespace doppio
