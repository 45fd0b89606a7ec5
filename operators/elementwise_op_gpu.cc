// CUDA elementwise ops: float32/float64 activations, their gradients, Add,
// Sub, Mul, Div with Caffe2 broadcasting, and LabelCrossEntropy (+ gradient),
// running the functors of elementwise_functors.h through the launchers of
// elementwise_op_gpu.cu.
// Schemas and gradient makers are the CPU ops' (one schema per op type).
#include "operators/elementwise_op_gpu.h"

#include "core/cuda/cuda_context.h"
#include "core/cuda/cuda_fallback_op.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/elementwise_ops_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {
namespace {

template <CudaUnaryKind kKind>
class CudaUnaryOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceInputOnDevice(*this, 0, X, context_.device());
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      Tensor* Y = Output(0);
      Y->Resize(X.dims());
      LaunchUnaryCuda(kKind, X.numel(), x, Y->mutable_data<T>(), context_.cuda_stream());
    });
  }
};

// <Op>Gradient(Y, dY) -> dX.
template <CudaUnaryGradientKind kKind>
class CudaUnaryGradientOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceSameType(*this, 0, Y, 1, dY);
    DOPPIO_ENFORCE(Y.dims() == dY.dims(), "gradient '", input_name(1), "' has shape ", dY.dims(),
                   " but the forward output '", input_name(0), "' has shape ", Y.dims());
    EnforceInputOnDevice(*this, 0, Y, context_.device());
    DispatchInput(FloatTypes{}, *this, 0, Y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* y = Y.data<T>();
      const T* dy = dY.data<T>();
      Tensor* dX = Output(0);
      dX->Resize(Y.dims());
      LaunchUnaryGradientCuda(kKind, Y.numel(), y, dy, dX->mutable_data<T>(),
                              context_.cuda_stream());
    });
  }
};

template <CudaBinaryKind kKind>
class CudaBinaryOp final : public Operator<CUDAContext> {
 public:
  CudaBinaryOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadBroadcastArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    EnforceSameType(*this, 0, A, 1, B);
    const BroadcastPlan plan = PlanBroadcast(*this, args_, {input_name(0), A.dims()},
                                             {input_name(1), B.dims()});
    functors::BroadcastIndexMapper mapper;
    DOPPIO_ENFORCE(functors::MakeBroadcastIndexMapper(plan.a, plan.b, plan.out, &mapper),
                   "CUDA kernel: broadcasting supports at most ",
                   functors::BroadcastIndexMapper::kMaxDims, " dims, got ", plan.out.size());
    // In place, every thread reads its own element before writing it; that
    // needs the aliased input to have the output's shape (no reallocation).
    const Tensor* C_blob = Output(0);
    DOPPIO_ENFORCE((C_blob != &A || A.dims() == plan.output_dims) &&
                       (C_blob != &B || B.dims() == plan.output_dims),
                   "CUDA kernel: in place on a broadcast input needs that input to "
                   "have the output's shape ",
                   plan.output_dims);
    EnforceInputOnDevice(*this, 0, A, context_.device());
    if (kKind == CudaBinaryKind::kDiv && A.dtype() != DataType::kFloat &&
        A.dtype() != DataType::kDouble) {
      // An integer division by zero is an error, which the CPU kernel checks
      // for on the host (on the device it would give an unspecified value).
      cpu_fallback_.Run(*this, context_);
      return;
    }
    DispatchInput(NumericTypes{}, *this, 0, A.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = A.data<T>();
      const T* b = B.data<T>();
      Tensor* C = Output(0);
      C->Resize(plan.output_dims);
      LaunchBinaryCuda(kKind, mapper, C->numel(), a, b, C->mutable_data<T>(),
                       context_.cuda_stream());
    });
  }

 private:
  BroadcastArgs args_;
  CudaCpuFallback cpu_fallback_;
};

// LabelCrossEntropy(X, label) -> Y and LabelCrossEntropyGradient(X, label, dY)
// -> dX: X float32 as [N, D] (a vector is one row), label int32 [N] or
// [N, 1]. Labels outside [0, D) give nan (forward) rather than an error:
// they live on the GPU, and checking them here would stall the stream.
struct RowsOfClasses {
  int64_t n = 1;
  int64_t d = 1;
};

RowsOfClasses CheckLabelCrossEntropyInputs(const OperatorBase& op, const Tensor& X,
                                           const Tensor& label) {
  DOPPIO_ENFORCE(X.dtype() == DataType::kFloat && X.device().kind == DeviceKind::kCUDA,
                 "CUDA kernel: '", op.input_name(0), "' must be a float32 CUDA tensor, not ",
                 X.DebugString());
  DOPPIO_ENFORCE(X.ndim() >= 1, "input '", op.input_name(0),
                 "' is a scalar; expected [N, D] probabilities (or a vector of D)");
  const RowsOfClasses shape =
      X.ndim() == 1 ? RowsOfClasses{1, X.dim(0)} : RowsOfClasses{X.dim(0), X.SizeFromDim(1)};
  const bool label_shape_ok =
      (label.ndim() == 1 && label.dim(0) == shape.n) ||
      (label.ndim() == 2 && label.dim(0) == shape.n && label.dim(1) == 1);
  DOPPIO_ENFORCE(label_shape_ok, "label '", op.input_name(1), "' has shape ", label.dims(),
                 " but '", op.input_name(0), "' has ", shape.n, " rows; expected [", shape.n,
                 "] or [", shape.n, ", 1]");
  DOPPIO_ENFORCE(label.dtype() == DataType::kInt32 && label.device().kind == DeviceKind::kCUDA,
                 "CUDA kernel: label '", op.input_name(1), "' must be an int32 CUDA tensor, not ",
                 label.DebugString());
  return shape;
}

class CudaLabelCrossEntropyOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& label = Input(1);
    const RowsOfClasses shape = CheckLabelCrossEntropyInputs(*this, X, label);
    Tensor* Y = Output(0);
    Y->Resize({shape.n});
    LaunchLabelCrossEntropyCuda(shape.n, shape.d, X.data<float>(), label.data<int32_t>(),
                                Y->mutable_data<float>(), context_.cuda_stream());
  }
};

class CudaLabelCrossEntropyGradientOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& label = Input(1);
    const Tensor& dY = Input(2);
    const RowsOfClasses shape = CheckLabelCrossEntropyInputs(*this, X, label);
    DOPPIO_ENFORCE(dY.ndim() == 1 && dY.dim(0) == shape.n && dY.dtype() == DataType::kFloat &&
                       dY.device().kind == DeviceKind::kCUDA,
                   "CUDA kernel: gradient '", input_name(2), "' must be float32 [", shape.n,
                   "] on the GPU, not ", dY.DebugString());
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    LaunchLabelCrossEntropyGradientCuda(shape.n, shape.d, X.data<float>(), label.data<int32_t>(),
                                        dY.data<float>(), dX->mutable_data<float>(),
                                        context_.cuda_stream());
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Relu, CudaUnaryOp<CudaUnaryKind::kRelu>);
REGISTER_CUDA_OPERATOR(Sigmoid, CudaUnaryOp<CudaUnaryKind::kSigmoid>);
REGISTER_CUDA_OPERATOR(Tanh, CudaUnaryOp<CudaUnaryKind::kTanh>);
REGISTER_CUDA_OPERATOR(Exp, CudaUnaryOp<CudaUnaryKind::kExp>);
REGISTER_CUDA_OPERATOR(Log, CudaUnaryOp<CudaUnaryKind::kLog>);
REGISTER_CUDA_OPERATOR(Sqrt, CudaUnaryOp<CudaUnaryKind::kSqrt>);
REGISTER_CUDA_OPERATOR(Sqr, CudaUnaryOp<CudaUnaryKind::kSqr>);
REGISTER_CUDA_OPERATOR(Neg, CudaUnaryOp<CudaUnaryKind::kNeg>);
REGISTER_CUDA_OPERATOR(Negative, CudaUnaryOp<CudaUnaryKind::kNeg>);
REGISTER_CUDA_OPERATOR(ReluGradient, CudaUnaryGradientOp<CudaUnaryGradientKind::kRelu>);
REGISTER_CUDA_OPERATOR(SigmoidGradient, CudaUnaryGradientOp<CudaUnaryGradientKind::kSigmoid>);
REGISTER_CUDA_OPERATOR(TanhGradient, CudaUnaryGradientOp<CudaUnaryGradientKind::kTanh>);
REGISTER_CUDA_OPERATOR(Add, CudaBinaryOp<CudaBinaryKind::kAdd>);
REGISTER_CUDA_OPERATOR(Sub, CudaBinaryOp<CudaBinaryKind::kSub>);
REGISTER_CUDA_OPERATOR(Mul, CudaBinaryOp<CudaBinaryKind::kMul>);
REGISTER_CUDA_OPERATOR(Div, CudaBinaryOp<CudaBinaryKind::kDiv>);
REGISTER_CUDA_OPERATOR(LabelCrossEntropy, CudaLabelCrossEntropyOp);
REGISTER_CUDA_OPERATOR(LabelCrossEntropyGradient, CudaLabelCrossEntropyGradientOp);

}  // namespace doppio
