// CUDA training-loop ops: Iter (the counter stays a CPU tensor, as in Caffe2,
// since the host reads it), LearningRate (the host computes the scalar and
// queues its copy to the device), MomentumSGD, MomentumSGDUpdate, Adam and
// Accuracy (float32; labels int32), whose kernels run the functors of
// elementwise_functors.h that the CPU ops run too. The update ops take their
// learning rate from the host (the CPU LearningRate op a data-parallel model
// shares across devices) or from their own GPU.
#include "operators/optimizer_op_gpu.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/learning_rate_op.h"
#include "operators/loss_ops.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/scalar_operand_gpu.h"

namespace doppio {
namespace {

// The iteration counter where Iter keeps it, on the host, or on the op's
// GPU (fed there, or copied by a net): then one int64 is copied back and
// the op's stream waited for.
int64_t ReadIterationOnHost(const OperatorBase& op, int index, const Tensor& counter,
                            CUDAContext& context) {
  if (counter.device().kind != DeviceKind::kCUDA) return ReadIteration(op, index, counter);
  EnforceDeviceInput(TypeList<int64_t>{}, op, index, counter, context.device());
  Tensor host(Device{});
  host.Resize(counter.dims());
  if (counter.numel() == 1) {
    context.CopyBytes(sizeof(int64_t), counter.data<int64_t>(), host.mutable_data<int64_t>());
    context.FinishDeviceComputation();
  }
  return ReadIteration(op, index, host);
}

class CudaIterOp final : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

  void RunOnDevice() override {
    const bool fresh = InputSize() == 0 && !OutputBlob(0)->IsTensor();
    Tensor* counter = OutputBlob(0)->GetMutableTensor(Device{DeviceKind::kCPU, 0});
    if (fresh) {
      counter->Resize({1});
      counter->mutable_data<int64_t>()[0] = 0;
    }
    DOPPIO_ENFORCE(counter->dtype() == DataType::kInt64 && counter->numel() == 1,
                   "the iteration counter '", output_name(0), "' must be one int64 element, not ",
                   counter->DebugString());
    int64_t* value = counter->mutable_data<int64_t>();
    DOPPIO_ENFORCE(*value >= 0 && *value < std::numeric_limits<int64_t>::max(),
                   "the iteration counter '", output_name(0), "' is ", *value,
                   "; it must be non-negative and below the int64 maximum");
    ++*value;
  }
};

class CudaLearningRateOp final : public Operator<CUDAContext> {
 public:
  CudaLearningRateOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), schedule_(ReadLearningRateSchedule(*this)) {}

  void RunOnDevice() override {
    const Tensor& iteration = Input(0);
    const int64_t iter = ReadIterationOnHost(*this, 0, iteration, context_);
    // A member, not a local: the copy below is queued and reads it later.
    host_rate_ = static_cast<float>(schedule_.At(iter));
    Tensor* output = Output(0);
    output->Resize({});
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(output->mutable_data<float>(), &host_rate_, sizeof(float),
                                      cudaMemcpyHostToDevice, context_.cuda_stream()));
  }

 private:
  LearningRateSchedule schedule_;
  float host_rate_ = 0;
};

// MomentumSGD(grad, moment, lr) -> (grad, moment) and MomentumSGDUpdate(grad,
// moment, lr, param) -> (grad, moment, param).
template <bool kUpdatesParam>
class CudaMomentumSgdOp final : public Operator<CUDAContext> {
 public:
  CudaMomentumSgdOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadMomentumSGDArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& grad = Input(0);
    const Tensor& moment = Input(1);
    EnforceDeviceInput(TypeList<float>{}, *this, 0, grad, context_.device());
    EnforceDeviceInput(TypeList<float>{}, *this, 1, moment, context_.device());
    const functors::ScalarOperand<float> lr =
        ScalarOperandOf<float>(*this, 2, Input(2), context_.device(), "the learning rate");
    EnforceSameSizeAndType(*this, 0, grad, 1, moment);
    const int64_t n = grad.numel();
    float* param = nullptr;
    if (kUpdatesParam) {
      const Tensor& param_in = Input(3);
      EnforceDeviceInput(TypeList<float>{}, *this, 3, param_in, context_.device());
      EnforceSameSizeAndType(*this, 0, grad, 3, param_in);
      Tensor* new_param = Output(2);
      if (new_param != &param_in) {
        // Out of place the new parameter starts as a copy.
        new_param->Resize(param_in.dims());
        DOPPIO_CUDA_CHECK(cudaMemcpyAsync(new_param->mutable_data<float>(),
                                          param_in.data<float>(), n * sizeof(float),
                                          cudaMemcpyDeviceToDevice, context_.cuda_stream()));
      }
      param = new_param->mutable_data<float>();
    }
    const float* g = grad.data<float>();
    const float* m = moment.data<float>();
    Tensor* new_grad = Output(0);
    Tensor* new_moment = Output(1);
    new_grad->Resize(grad.dims());
    new_moment->Resize(moment.dims());
    LaunchMomentumSgdCuda(n, g, m, lr, args_.momentum, args_.nesterov,
                          new_grad->mutable_data<float>(), new_moment->mutable_data<float>(), param,
                          context_.cuda_stream());
  }

 private:
  MomentumSGDArgs args_;
};

// Adam(param, moment_1, moment_2, grad, lr, iter) -> (param, moment_1,
// moment_2[, effective step]); iter is the CPU counter Iter keeps.
class CudaAdamOp final : public Operator<CUDAContext> {
 public:
  CudaAdamOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadAdamArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& param = Input(0);
    const Tensor& moment_1 = Input(1);
    const Tensor& moment_2 = Input(2);
    const Tensor& grad = Input(3);
    const Tensor& iteration = Input(5);
    for (int i = 0; i < 4; ++i) {
      EnforceDeviceInput(TypeList<float>{}, *this, i, Input(i), context_.device());
    }
    const functors::ScalarOperand<float> lr =
        ScalarOperandOf<float>(*this, 4, Input(4), context_.device(), "the learning rate");
    EnforceSameSizeAndType(*this, 0, param, 1, moment_1);
    EnforceSameSizeAndType(*this, 0, param, 2, moment_2);
    EnforceSameSizeAndType(*this, 0, param, 3, grad);
    const functors::AdamStep adam{
        args_.beta1, args_.beta2, args_.epsilon,
        args_.Correction(ReadIterationOnHost(*this, 5, iteration, context_))};
    const float* w = param.data<float>();
    const float* m1 = moment_1.data<float>();
    const float* m2 = moment_2.data<float>();
    const float* g = grad.data<float>();
    Tensor* outputs[3] = {Output(0), Output(1), Output(2)};
    outputs[0]->Resize(param.dims());
    outputs[1]->Resize(moment_1.dims());
    outputs[2]->Resize(moment_2.dims());
    float* step_out = nullptr;
    if (OutputSize() > 3) {
      Tensor* step = Output(3);
      step->Resize(grad.dims());
      step_out = step->mutable_data<float>();
    }
    LaunchAdamCuda(param.numel(), adam, w, m1, m2, g, lr,
                   outputs[0]->mutable_data<float>(), outputs[1]->mutable_data<float>(),
                   outputs[2]->mutable_data<float>(), step_out, context_.cuda_stream());
  }

 private:
  AdamArgs args_;
};

// Accuracy(predictions [N, D] float32, labels [N] int32) -> accuracy, a
// device scalar. Labels outside [0, D) give nan rather than an error: they
// live on the GPU, and checking them here would stall the stream.
class CudaAccuracyOp final : public Operator<CUDAContext> {
 public:
  CudaAccuracyOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), top_k_(ReadAccuracyTopK(*this)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& labels = Input(1);
    EnforceDeviceInput(TypeList<float>{}, *this, 0, X, context_.device());
    const int64_t rows = CheckAccuracyShapes(*this, X, labels);
    EnforceDeviceInput(TypeList<int32_t>{}, *this, 1, labels, context_.device());
    Tensor* accuracy = Output(0);
    accuracy->Resize({});
    LaunchAccuracyCuda(rows, X.dim(1), top_k_, X.data<float>(), labels.data<int32_t>(),
                       accuracy->mutable_data<float>(), context_.cuda_stream());
  }

 private:
  int top_k_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Iter, CudaIterOp);
REGISTER_CUDA_OPERATOR(LearningRate, CudaLearningRateOp);
REGISTER_CUDA_OPERATOR(MomentumSGD, CudaMomentumSgdOp<false>);
REGISTER_CUDA_OPERATOR(MomentumSGDUpdate, CudaMomentumSgdOp<true>);
REGISTER_CUDA_OPERATOR(Adam, CudaAdamOp);
REGISTER_CUDA_OPERATOR(Accuracy, CudaAccuracyOp);

}  // namespace doppio
