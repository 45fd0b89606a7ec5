// CUDA Dropout and DropoutGrad (float32): the keep mask comes from the
// Philox functor of elementwise_functors.h, keyed by the op's random seed,
// with a fresh counter offset per run; no cuRAND.
#include <cstdint>
#include <random>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/elementwise_op_gpu.h"

namespace doppio {
namespace {

float ReadRatio(const OperatorBase& op) {
  const float ratio = op.GetSingleArgument<float>("ratio", 0.5f);
  DOPPIO_ENFORCE(ratio >= 0.0f && ratio < 1.0f, "argument ratio is ", ratio,
                 "; it must be in [0, 1)");
  return ratio;
}

void EnforceFloat(const OperatorBase& op, int index, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCUDA, "CUDA kernel: '", op.input_name(index),
                 "' is not a CUDA tensor");
  DOPPIO_ENFORCE(tensor.dtype() == DataType::kFloat, "CUDA kernel: '", op.input_name(index),
                 "' holds ", DataTypeName(tensor.dtype()), "; the GPU kernel supports float32");
}

class CudaDropoutOp final : public Operator<CUDAContext> {
 public:
  CudaDropoutOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        ratio_(ReadRatio(*this)),
        is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
    DOPPIO_ENFORCE(is_test_ || OutputSize() == 2,
                   "training mode (is_test=0) needs the mask output, which the gradient "
                   "reads; give two outputs or set is_test=1");
    if (def.device_option().has_random_seed()) {
      seed_ = def.device_option().random_seed();
    } else {
      std::mt19937& generator = context_.RandGenerator();
      seed_ = (static_cast<uint64_t>(generator()) << 32) | generator();
    }
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloat(*this, 0, X);
    const float* x = X.data<float>();
    const int64_t n = X.numel();
    Tensor* Y = Output(0);
    Y->Resize(X.dims());
    float* y = Y->mutable_data<float>();
    bool* mask = nullptr;
    if (OutputSize() == 2) {
      Tensor* mask_tensor = Output(1);
      mask_tensor->Resize(X.dims());
      mask = mask_tensor->mutable_data<bool>();
    }
    if (is_test_) {
      // Nothing is dropped at test time: ratio 0 keeps every element unscaled.
      if (mask != nullptr) {
        LaunchDropoutCuda(functors::DropoutKeep{{seed_, 0}, 0.0f}, 1.0f, n, x, y, mask,
                          context_.cuda_stream());
      } else if (y != x && n > 0) {
        DOPPIO_ENFORCE(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                       context_.cuda_stream()) == cudaSuccess,
                       "copying '", input_name(0), "' on the GPU failed");
      }
      return;
    }
    const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(ratio_)));
    LaunchDropoutCuda(functors::DropoutKeep{{seed_, offset_++}, ratio_}, scale, n, x, y, mask,
                      context_.cuda_stream());
  }

 private:
  float ratio_;
  bool is_test_;
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

class CudaDropoutGradientOp final : public Operator<CUDAContext> {
 public:
  CudaDropoutGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        ratio_(ReadRatio(*this)),
        is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
    DOPPIO_ENFORCE(is_test_ || InputSize() == 2,
                   "training mode (is_test=0) needs Dropout's mask as the second input");
  }

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    EnforceFloat(*this, 0, dY);
    const float* dy = dY.data<float>();
    const int64_t n = dY.numel();
    Tensor* dX = Output(0);
    dX->Resize(dY.dims());
    float* dx = dX->mutable_data<float>();
    if (is_test_) {
      if (dx != dy && n > 0) {
        DOPPIO_ENFORCE(cudaMemcpyAsync(dx, dy, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                       context_.cuda_stream()) == cudaSuccess,
                       "copying '", input_name(0), "' on the GPU failed");
      }
      return;
    }
    const Tensor& mask = Input(1);
    DOPPIO_ENFORCE(mask.dtype() == DataType::kBool, "mask '", input_name(1), "' holds ",
                   DataTypeName(mask.dtype()), "; Dropout's mask is bool");
    DOPPIO_ENFORCE(mask.dims() == dY.dims(), "mask '", input_name(1), "' has shape ", mask.dims(),
                   " but '", input_name(0), "' has shape ", dY.dims());
    const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(ratio_)));
    LaunchDropoutGradientCuda(scale, n, dy, mask.data<bool>(), dx, context_.cuda_stream());
  }

 private:
  float ratio_;
  bool is_test_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Dropout, CudaDropoutOp);
REGISTER_CUDA_OPERATOR(DropoutGrad, CudaDropoutGradientOp);

}  // namespace doppio
