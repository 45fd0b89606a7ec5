#include "core/context.h"

#include <cstring>

namespace doppio {

Device DeviceFromOption(const DeviceOption& option) {
  Device device;
  device.kind = option.device_type() == static_cast<int>(DeviceKind::kCUDA)
                    ? DeviceKind::kCUDA
                    : DeviceKind::kCPU;
  device.id = device.kind == DeviceKind::kCUDA ? option.cuda_gpu_id() : 0;
  return device;
}

CPUContext::CPUContext(const DeviceOption& option)
    : device_{DeviceKind::kCPU, 0},
      has_seed_(option.has_random_seed()),
      seed_(option.random_seed()) {}

void CPUContext::CreateGenerator() {
  generator_ = std::make_unique<std::mt19937>(has_seed_ ? seed_ : std::random_device{}());
}

void CPUContext::CopyBytes(size_t nbytes, const void* source, void* destination) {
  if (nbytes > 0) std::memcpy(destination, source, nbytes);
}

}  // namespace doppio
