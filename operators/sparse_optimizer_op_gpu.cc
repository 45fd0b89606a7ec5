// The sparse (GradientSlice) parameter updates on CUDA:
// SparseMomentumSGDUpdate and SparseAdagrad, and dense Adagrad (an Adagrad
// optimizer's dense parameters beside the sparse ones), float32 or float64, int32 or
// int64 indices, every tensor but the learning rate on the op's GPU (the
// rate may be the shared CPU LearningRate output). Rows are updated in
// index order per column (sparse_functors.h), so repeated indices -- which
// Parallelize's concatenated slices have -- give the CPU's result. The
// schemas are the CPU ops'.
#include <cstdint>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/scalar_operand_gpu.h"
#include "operators/sparse_index_utils.h"
#include "operators/sparse_index_utils_gpu.h"
#include "operators/sparse_op_gpu.h"

namespace doppio {
namespace {

// An operand of a sparse update: the op's input number and its tensor.
struct Operand {
  int input;
  const Tensor& tensor;
};

// What both ops check: param and moment alike, grad one row of param per
// index, all on the op's GPU; returns the learning rate operand.
functors::ScalarOperand<float> CheckSparseUpdate(const OperatorBase& op,
                                                 const CUDAContext& context, Operand param_in,
                                                 Operand moment_in, Operand grad_in,
                                                 Operand indices_in, Operand lr_in) {
  const Tensor& param = param_in.tensor;
  const Tensor& grad = grad_in.tensor;
  const Tensor& indices = indices_in.tensor;
  const int param_input = param_in.input, grad_input = grad_in.input;
  const int indices_input = indices_in.input;
  EnforceSameSizeAndType(op, param_input, param, moment_in.input, moment_in.tensor);
  EnforceSameType(op, param_input, param, grad_input, grad);
  EnforceHasRows(op, param_input, param);
  for (const Operand& operand : {param_in, moment_in, grad_in}) {
    EnforceInputOnDevice(op, operand.input, operand.tensor, context.device());
  }
  const int64_t row_size = param.SizeFromDim(1);
  const int64_t count = indices.numel();
  DOPPIO_ENFORCE(grad.numel() == count * row_size, "'", op.input_name(grad_input), "' has ",
                 grad.numel(), " elements (shape ", grad.dims(), ") but ", count, " indices in '",
                 op.input_name(indices_input), "' times rows of ", row_size, " elements of '",
                 op.input_name(param_input), "' need ", count * row_size);
  return ScalarOperandOf<float>(op, lr_in.input, lr_in.tensor, context.device(),
                                "the learning rate");
}

functors::AdagradStep AdagradElement(const AdagradArgs& args) { return {args.epsilon, args.decay}; }

functors::SparseMomentumSgdElement MomentumElement(const MomentumSGDArgs& args) {
  return {args.momentum, args.nesterov};
}

// SparseMomentumSGDUpdate(grad, moment, lr, param, indices)
//     -> (grad, moment, param), moment and param in place.
class CudaSparseMomentumSgdUpdateOp final : public Operator<CUDAContext> {
 public:
  CudaSparseMomentumSgdUpdateOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        element_(MomentumElement(ReadMomentumSGDArgs(*this))) {}

  void RunOnDevice() override {
    const Tensor& grad = Input(0);
    const Tensor& param = Input(3);
    const Tensor& indices = Input(4);
    const functors::ScalarOperand<float> lr =
        CheckSparseUpdate(*this, context_, {3, param}, {1, Input(1)}, {0, grad}, {4, indices},
                          {2, Input(2)});
    const int64_t rows = param.dim(0);
    const int64_t row_size = param.SizeFromDim(1);
    DispatchInput(IndexTypes{}, *this, 4, indices.dtype(), [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      CheckCudaIndicesInRange<Index>(*this, context_, 4, indices, rows, 3);
      DispatchTypes(FloatTypes{}, input_name(3), param.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor* steps = Output(0);
        if (steps != &grad) steps->Resize(grad.dims());
        // Outputs 1 and 2 are moment and param themselves (EnforceInplace).
        LaunchSparseMomentumSgdCuda<T, Index>(
            element_, indices.numel(), row_size, rows, indices.data<Index>(), grad.data<T>(),
            lr, Output(1)->mutable_data<T>(), Output(2)->mutable_data<T>(),
            steps->mutable_data<T>(), context_.cuda_stream());
      });
    });
  }

 private:
  functors::SparseMomentumSgdElement element_;
};

// SparseAdagrad(param, moment, indices, grad, lr) -> (param, moment), in place.
class CudaSparseAdagradOp final : public Operator<CUDAContext> {
 public:
  CudaSparseAdagradOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), element_{ReadAdagradArgs(*this).epsilon} {}

  void RunOnDevice() override {
    const Tensor& param = Input(0);
    const Tensor& indices = Input(2);
    const Tensor& grad = Input(3);
    const functors::ScalarOperand<float> lr =
        CheckSparseUpdate(*this, context_, {0, param}, {1, Input(1)}, {3, grad}, {2, indices},
                          {4, Input(4)});
    const int64_t rows = param.dim(0);
    const int64_t row_size = param.SizeFromDim(1);
    DispatchInput(IndexTypes{}, *this, 2, indices.dtype(), [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      CheckCudaIndicesInRange<Index>(*this, context_, 2, indices, rows, 0);
      DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        LaunchSparseAdagradCuda<T, Index>(element_, indices.numel(), row_size, rows,
                                          indices.data<Index>(), grad.data<T>(), lr,
                                          Output(1)->mutable_data<T>(),
                                          Output(0)->mutable_data<T>(), context_.cuda_stream());
      });
    });
  }

 private:
  functors::SparseAdagradElement element_;
};

// Adagrad(param, moment, grad, lr) -> (param, moment[, effective_lr, update]).
class CudaAdagradOp final : public Operator<CUDAContext> {
 public:
  CudaAdagradOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), adagrad_(AdagradElement(ReadAdagradArgs(*this))) {}

  void RunOnDevice() override {
    const Tensor& param = Input(0);
    const Tensor& moment = Input(1);
    const Tensor& grad = Input(2);
    EnforceSameSizeAndType(*this, 0, param, 1, moment);
    EnforceSameSizeAndType(*this, 0, param, 2, grad);
    for (int i = 0; i < 3; ++i) EnforceInputOnDevice(*this, i, Input(i), context_.device());
    const functors::ScalarOperand<float> lr =
        ScalarOperandOf<float>(*this, 3, Input(3), context_.device(), "the learning rate");
    DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* extra[2] = {nullptr, nullptr};
      for (int k = 0; k + 2 < OutputSize(); ++k) {
        Output(k + 2)->Resize(grad.dims());
        extra[k] = Output(k + 2)->mutable_data<T>();
      }
      Output(0)->Resize(param.dims());
      Output(1)->Resize(moment.dims());
      LaunchAdagradCuda<T>(adagrad_, param.numel(), param.data<T>(), moment.data<T>(),
                           grad.data<T>(), lr, Output(0)->mutable_data<T>(),
                           Output(1)->mutable_data<T>(), extra[0], extra[1],
                           context_.cuda_stream());
    });
  }

 private:
  functors::AdagradStep adagrad_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Adagrad, CudaAdagradOp);
REGISTER_CUDA_OPERATOR(SparseMomentumSGDUpdate, CudaSparseMomentumSgdUpdateOp);
REGISTER_CUDA_OPERATOR(SparseAdagrad, CudaSparseAdagradOp);

}  // namespace doppio
