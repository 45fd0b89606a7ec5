// The GPU's DeviceMemory for the recurrent ops (recurrent_network_op.h):
// their initial-state copies, gradient zeroing and accumulation on the op's
// GPU. The ops themselves are the host ops recurrent_network_op.cc
// registers for CUDA too; they run step nets whose ops have CUDA kernels.
#include <memory>

#include "core/cuda/cuda_context.h"
#include "operators/elementwise_op_gpu.h"
#include "operators/math_op_gpu.h"
#include "operators/recurrent_network_op.h"

namespace doppio {
namespace {

// Each call queues on the device's stream 0 and waits for it: the ops that
// follow are host ops or step nets that may run on other streams.
class CudaMemory final : public rnn::DeviceMemory {
 public:
  explicit CudaMemory(const DeviceOption& option) : context_(option) {}
  Device device() const override { return context_.device(); }
  void Copy(const float* from, float* to, int64_t n) override {
    context_.SwitchToDevice(0);
    context_.CopyBytes(sizeof(float) * n, from, to);
    context_.FinishDeviceComputation();
  }
  void Zero(float* data, int64_t n) override {
    context_.SwitchToDevice(0);
    LaunchConstantFillCuda<float>(n, 0.0f, data, context_.cuda_stream());
    context_.FinishDeviceComputation();
  }
  void AddInto(const float* from, float* to, int64_t n) override {
    context_.SwitchToDevice(0);
    LaunchSumIntoCuda<float>(n, from, to, context_.cuda_stream());
    context_.FinishDeviceComputation();
  }

 private:
  CUDAContext context_;
};

std::unique_ptr<rnn::DeviceMemory> MakeCudaMemory(const DeviceOption& option) {
  return std::make_unique<CudaMemory>(option);
}

const bool kRegistered = rnn::RegisterDeviceMemory(DeviceKind::kCUDA, &MakeCudaMemory);

}  // namespace
}  // namespace doppio
