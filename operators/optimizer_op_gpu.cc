// CUDA training-loop ops: Iter (the counter stays a CPU tensor, as in Caffe2,
// since the host reads it), LearningRate (the host computes the scalar and
// queues its copy to the device), MomentumSGD, MomentumSGDUpdate, Adam and
// Accuracy (float32; labels int32), whose kernels run the functors of
// elementwise_functors.h that the CPU ops run too. The update ops take their
// learning rate from the host (the CPU LearningRate op a data-parallel model
// shares across devices) or from their own GPU.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/learning_rate_op.h"
#include "operators/optimizer_op_gpu.h"
#include "operators/optimizer_utils.h"
#include "operators/scalar_operand_gpu.h"

namespace doppio {
namespace {

// Throws unless input `index` is a float32 tensor on a GPU.
void EnforceGpuFloat(const OperatorBase& op, int index, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCUDA, "CUDA kernel: '", op.input_name(index),
                 "' is not a CUDA tensor");
  DOPPIO_ENFORCE(tensor.dtype() == DataType::kFloat, "CUDA kernel: '", op.input_name(index),
                 "' holds ", DataTypeName(tensor.dtype()), "; the GPU kernel supports float32");
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
      : Operator<CUDAContext>(def, workspace) {
    DOPPIO_ENFORCE(HasArgument("base_lr"), "the base learning rate (argument base_lr) must be set");
    const std::string policy = GetSingleArgument<std::string>("policy", "");
    DOPPIO_ENFORCE(!policy.empty(), "a learning rate policy (argument policy) must be given");
    base_lr_ = GetSingleArgument<float>("base_lr", 0.0f) *
               static_cast<double>(GetSingleArgument<float>("lr_scale", 1.0f));
    multiplier_ = MakeLearningRateMultiplier(*this, policy, "");
  }

  void RunOnDevice() override {
    const Tensor& iteration = Input(0);
    DOPPIO_ENFORCE(iteration.device().kind == DeviceKind::kCPU, "the iteration counter '",
                   input_name(0), "' must be a CPU tensor (as Iter keeps it)");
    const int64_t iter = ReadIteration(*this, 0, iteration);
    // A member, not a local: the copy below is queued and reads it later.
    host_rate_ = static_cast<float>(base_lr_ * multiplier_(iter));
    Tensor* output = Output(0);
    output->Resize({});
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(output->mutable_data<float>(), &host_rate_, sizeof(float),
                                      cudaMemcpyHostToDevice, context_.cuda_stream()));
  }

 private:
  double base_lr_ = 0;
  LearningRateMultiplier multiplier_;
  float host_rate_ = 0;
};

// MomentumSGD(grad, moment, lr) -> (grad, moment) and MomentumSGDUpdate(grad,
// moment, lr, param) -> (grad, moment, param).
template <bool kUpdatesParam>
class CudaMomentumSgdOp final : public Operator<CUDAContext> {
 public:
  CudaMomentumSgdOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        momentum_(GetSingleArgument<float>("momentum", 0.0f)),
        nesterov_(GetSingleArgument<int>("nesterov", 0) != 0) {}

  void RunOnDevice() override {
    const Tensor& grad = Input(0);
    const Tensor& moment = Input(1);
    EnforceGpuFloat(*this, 0, grad);
    EnforceGpuFloat(*this, 1, moment);
    const functors::ScalarOperand<float> lr =
        ScalarOperandOf<float>(*this, 2, Input(2), context_.device(), "the learning rate");
    EnforceSameSizeAndType(*this, 0, grad, 1, moment);
    const int64_t n = grad.numel();
    float* param = nullptr;
    if (kUpdatesParam) {
      const Tensor& param_in = Input(3);
      EnforceGpuFloat(*this, 3, param_in);
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
    LaunchMomentumSgdCuda(n, g, m, lr, momentum_, nesterov_,
                          new_grad->mutable_data<float>(), new_moment->mutable_data<float>(),
                          param, context_.cuda_stream());
  }

 private:
  float momentum_;
  bool nesterov_;
};

// Adam(param, moment_1, moment_2, grad, lr, iter) -> (param, moment_1,
// moment_2[, effective step]); iter is the CPU counter Iter keeps.
class CudaAdamOp final : public Operator<CUDAContext> {
 public:
  CudaAdamOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        beta1_(GetSingleArgument<float>("beta1", 0.9f)),
        beta2_(GetSingleArgument<float>("beta2", 0.999f)),
        epsilon_(GetSingleArgument<float>("epsilon", 1e-5f)) {}

  void RunOnDevice() override {
    const Tensor& param = Input(0);
    const Tensor& moment_1 = Input(1);
    const Tensor& moment_2 = Input(2);
    const Tensor& grad = Input(3);
    const Tensor& iteration = Input(5);
    for (int i = 0; i < 4; ++i) EnforceGpuFloat(*this, i, Input(i));
    const functors::ScalarOperand<float> lr =
        ScalarOperandOf<float>(*this, 4, Input(4), context_.device(), "the learning rate");
    EnforceSameSizeAndType(*this, 0, param, 1, moment_1);
    EnforceSameSizeAndType(*this, 0, param, 2, moment_2);
    EnforceSameSizeAndType(*this, 0, param, 3, grad);
    DOPPIO_ENFORCE(iteration.device().kind == DeviceKind::kCPU, "the iteration counter '",
                   input_name(5), "' must be a CPU tensor (as Iter keeps it)");
    const double t = static_cast<double>(ReadIteration(*this, 5, iteration)) + 1.0;
    const double beta1 = beta1_, beta2 = beta2_;
    const functors::AdamStep adam{
        beta1, beta2, static_cast<double>(epsilon_),
        std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t))};
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
  float beta1_, beta2_, epsilon_;
};

// Accuracy(predictions [N, D] float32, labels [N] int32) -> accuracy, a
// device scalar. Labels outside [0, D) give nan rather than an error: they
// live on the GPU, and checking them here would stall the stream.
class CudaAccuracyOp final : public Operator<CUDAContext> {
 public:
  CudaAccuracyOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), top_k_(GetSingleArgument<int>("top_k", 1)) {
    DOPPIO_ENFORCE(top_k_ >= 1, "argument top_k is ", top_k_, "; it must be at least 1");
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& labels = Input(1);
    EnforceGpuFloat(*this, 0, X);
    DOPPIO_ENFORCE(X.ndim() == 2, "predictions '", input_name(0), "' have shape ", X.dims(),
                   "; expected [N, classes]");
    const int64_t rows = X.dim(0);
    DOPPIO_ENFORCE(labels.ndim() == 1 && labels.dim(0) == rows, "labels '", input_name(1),
                   "' have shape ", labels.dims(), " but predictions '", input_name(0), "' have ",
                   rows, " rows; expected [", rows, "]");
    DOPPIO_ENFORCE(labels.dtype() == DataType::kInt32 && labels.device().kind == DeviceKind::kCUDA,
                   "CUDA kernel: labels '", input_name(1), "' must be an int32 CUDA tensor, not ",
                   labels.DebugString());
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
