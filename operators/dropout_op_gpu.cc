// CUDA Dropout and DropoutGrad (float32): the keep mask comes from the
// Philox functor of elementwise_functors.h, keyed by the op's random seed,
// with a fresh counter offset per run; no cuRAND.
#include <cstdint>
#include <random>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "operators/dropout_op.h"
#include "operators/elementwise_op_gpu.h"
#include "operators/op_type_dispatch.h"

namespace doppio {
namespace {

class CudaDropoutOp final : public Operator<CUDAContext> {
 public:
  CudaDropoutOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadDropoutArgs(*this, /*gradient=*/false)) {
    if (def.device_option().has_random_seed()) {
      seed_ = def.device_option().random_seed();
    } else {
      std::mt19937& generator = context_.RandGenerator();
      seed_ = (static_cast<uint64_t>(generator()) << 32) | generator();
    }
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceDeviceInput(TypeList<float>{}, *this, 0, X, context_.device());
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
    if (args_.is_test) {
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
    const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(args_.ratio)));
    LaunchDropoutCuda(functors::DropoutKeep{{seed_, offset_++}, args_.ratio}, scale, n, x, y, mask,
                      context_.cuda_stream());
  }

 private:
  DropoutArgs args_;
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

class CudaDropoutGradientOp final : public Operator<CUDAContext> {
 public:
  CudaDropoutGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadDropoutArgs(*this, /*gradient=*/true)) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    EnforceDeviceInput(TypeList<float>{}, *this, 0, dY, context_.device());
    const float* dy = dY.data<float>();
    const int64_t n = dY.numel();
    Tensor* dX = Output(0);
    dX->Resize(dY.dims());
    float* dx = dX->mutable_data<float>();
    if (args_.is_test) {
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
    const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(args_.ratio)));
    LaunchDropoutGradientCuda(scale, n, dy, mask.data<bool>(), dx, context_.cuda_stream());
  }

 private:
  DropoutArgs args_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Dropout, CudaDropoutOp);
REGISTER_CUDA_OPERATOR(DropoutGrad, CudaDropoutGradientOp);

}  // namespace doppio
