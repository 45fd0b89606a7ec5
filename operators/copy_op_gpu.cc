// Cross-device copies on CUDA (issue 9): CopyCPUToGPU, CopyGPUToCPU,
// CopyFromCPUInput, EnsureCPUOutput, Copy and CopyOnDeviceLike, with
// Caffe2's names and semantics. Their schemas and gradients live with the CPU
// Copy in utility_op.cc.
//
// Every copy is queued on the op's stream (CUDAContext::CopyBytes, which uses
// cudaMemcpyDefault: unified addressing picks the direction and lets the
// driver copy GPU->GPU peer to peer or staged through the host). Run()
// waits for the stream afterwards, so a CPU output is complete when the op
// returns.
#include <string>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"

namespace doppio {
namespace {

const char* DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kCUDA ? "CUDA" : "CPU";
}

class CudaCopyOpBase : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

 protected:
  // Input 0, checked to live on `expected` (kCUDA: any GPU).
  const Tensor& InputOn(DeviceKind expected, const char* hint) const {
    const Tensor& input = Input(0);
    DOPPIO_ENFORCE(input.device().kind == expected, "input '", input_name(0), "' is on the ",
                   DeviceKindName(input.device().kind), ", but this op copies from the ",
                   DeviceKindName(expected), hint);
    DOPPIO_ENFORCE(input.dtype() != DataType::kUndefined, "input '", input_name(0),
                   "' holds no data yet");
    DOPPIO_ENFORCE(input.dtype() != DataType::kString, "input '", input_name(0),
                   "' holds strings, which cannot live on a GPU");
    return input;
  }

  // Shape, dtype and bytes of `source` into `destination`, on the op's stream.
  void CopyTensor(const Tensor& source, Tensor* destination) {
    destination->Resize(source.dims());
    void* out = destination->raw_mutable_data(source.dtype());
    if (source.nbytes() > 0) context_.CopyBytes(source.nbytes(), source.raw_data(), out);
  }

  Tensor* HostOutput() { return OutputBlob(0)->GetMutableTensor(Device{DeviceKind::kCPU, 0}); }
};

// CPU input -> output on the op's GPU (CopyCPUToGPU, CopyFromCPUInput).
class CopyHostToDeviceOp final : public CudaCopyOpBase {
 public:
  using CudaCopyOpBase::CudaCopyOpBase;
  void RunOnDevice() override {
    const Tensor& input = InputOn(DeviceKind::kCPU, "; use Copy for GPU inputs");
    CopyTensor(input, Output(0));
  }
};

// GPU input -> CPU output (CopyGPUToCPU).
class CopyDeviceToHostOp final : public CudaCopyOpBase {
 public:
  using CudaCopyOpBase::CudaCopyOpBase;
  void RunOnDevice() override {
    const Tensor& input = InputOn(DeviceKind::kCUDA, "; the input is already on the CPU");
    CopyTensor(input, HostOutput());
  }
};

// CPU or GPU input -> CPU output (EnsureCPUOutput under a CUDA option).
class EnsureCPUOutputCudaOp final : public CudaCopyOpBase {
 public:
  using CudaCopyOpBase::CudaCopyOpBase;
  // A CPU input is copied by the host at once, so its writer (maybe an
  // asynchronous device-to-host copy) must have finished first.
  bool NeedsHostSync() const override { return true; }
  void RunOnDevice() override {
    const Tensor& input = Input(0);
    if (input.device().kind == DeviceKind::kCPU) {
      if (IsInputOutputAlias(0, 0)) return;
      HostOutput()->CopyFrom(input);
      return;
    }
    CopyTensor(InputOn(DeviceKind::kCUDA, ""), HostOutput());
  }
};

// GPU input (any GPU) -> output on the op's GPU (Copy under a CUDA option).
class CopyDeviceToDeviceOp final : public CudaCopyOpBase {
 public:
  using CudaCopyOpBase::CudaCopyOpBase;
  void RunOnDevice() override {
    const Tensor& input =
        InputOn(DeviceKind::kCUDA, "; use CopyCPUToGPU or CopyFromCPUInput for CPU inputs");
    if (IsInputOutputAlias(0, 0) && input.device() == context_.device()) return;
    CopyTensor(input, Output(0));
  }
};

// GPU input -> output on the device of input 1 (Copy's gradient; the copy is
// still queued on this op's stream, which may read and write other devices).
class CopyOnDeviceLikeCudaOp final : public CudaCopyOpBase {
 public:
  using CudaCopyOpBase::CudaCopyOpBase;
  void RunOnDevice() override {
    const Tensor& input = InputOn(DeviceKind::kCUDA, "");
    const Device target = Input(1).device();
    if (target.kind == DeviceKind::kCPU) {
      CopyTensor(input, HostOutput());
      return;
    }
    // The CUDA allocator allocates on the current device.
    CudaDeviceGuard guard(target.id);
    CopyTensor(input, OutputBlob(0)->GetMutableTensor(target));
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(CopyCPUToGPU, CopyHostToDeviceOp);
REGISTER_CUDA_OPERATOR(CopyFromCPUInput, CopyHostToDeviceOp);
REGISTER_CUDA_OPERATOR(CopyGPUToCPU, CopyDeviceToHostOp);
REGISTER_CUDA_OPERATOR(EnsureCPUOutput, EnsureCPUOutputCudaOp);
REGISTER_CUDA_OPERATOR(Copy, CopyDeviceToDeviceOp);
REGISTER_CUDA_OPERATOR(CopyOnDeviceLike, CopyOnDeviceLikeCudaOp);

}  // namespace doppio
