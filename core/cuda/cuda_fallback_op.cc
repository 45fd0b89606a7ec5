#include "core/cuda/cuda_fallback_op.h"

#include <string>

#include "core/enforce.h"

namespace doppio {
namespace {

// def on the host: same type, arguments, engine preference and random seed.
OperatorDef HostDef(const OperatorDef& def) {
  OperatorDef host = def;
  DeviceOption* option = host.mutable_device_option();
  option->set_device_type(CPU);
  option->clear_cuda_gpu_id();
  return host;
}

const Tensor& TensorOf(const Blob& blob, const std::string& name) {
  DOPPIO_ENFORCE(blob.IsTensor(), "'", name, "' holds ", blob.TypeName(),
                 "; this op has no CUDA kernel, and its CPU fallback moves tensors only");
  return blob.GetTensor();
}

void EnforceDeviceStorable(const Tensor& tensor, const std::string& name) {
  DOPPIO_ENFORCE(tensor.dtype() != DataType::kString, "'", name,
                 "' holds strings, which cannot live on a GPU; run this op on the CPU");
}

}  // namespace

CudaFallbackOp::CudaFallbackOp(const OperatorDef& def, Workspace* workspace,
                               const OperatorCreator& cpu)
    : Operator<CUDAContext>(def, workspace) {
  for (const std::string& name : def.input()) host_.CreateBlob(name);
  cpu_op_ = cpu(HostDef(def), &host_);
}

void CudaFallbackOp::CopyInputsToHost() {
  for (int i = 0; i < InputSize(); ++i) {
    const Tensor& source = TensorOf(InputBlob(i), input_name(i));
    Tensor* host = host_.GetBlob(input_name(i))->GetMutableTensor(Device{});
    if (source.device().kind != DeviceKind::kCUDA) {
      host->CopyFrom(source);
      continue;
    }
    EnforceDeviceStorable(source, input_name(i));
    host->Resize(source.dims());
    if (source.dtype() == DataType::kUndefined) continue;
    void* destination = host->raw_mutable_data(source.dtype());
    if (source.nbytes() > 0) context_.CopyBytes(source.nbytes(), source.raw_data(), destination);
  }
  // The CPU kernel reads them next.
  context_.FinishDeviceComputation();
}

void CudaFallbackOp::CopyOutputsToDevice() {
  for (int i = 0; i < OutputSize(); ++i) {
    const Tensor& result = TensorOf(*host_.GetBlob(output_name(i)), output_name(i));
    EnforceDeviceStorable(result, output_name(i));
    Tensor* output = Output(i);
    output->Resize(result.dims());
    if (result.dtype() == DataType::kUndefined) continue;
    void* destination = output->raw_mutable_data(result.dtype());
    // From pageable memory the copy is staged before CopyBytes returns, so
    // the next run may overwrite the host tensor.
    if (result.nbytes() > 0) context_.CopyBytes(result.nbytes(), result.raw_data(), destination);
  }
}

void CudaFallbackOp::RunOnDevice() {
  CopyInputsToHost();
  cpu_op_->Run();
  CopyOutputsToDevice();
}

std::unique_ptr<OperatorBase> CreateCudaFallback(const OperatorDef& def, Workspace* workspace) {
  const OperatorCreator* cpu = OperatorRegistry::Find({def.type(), DeviceKind::kCPU, ""});
  DOPPIO_ENFORCE(cpu != nullptr, "operator type '", def.type(),
                 "' has no CPU kernel to fall back on");
  return std::make_unique<CudaFallbackOp>(def, workspace, *cpu);
}

void CudaCpuFallback::Run(const OperatorBase& op, const CUDAContext& context) {
  if (!fallback_) fallback_ = CreateCudaFallback(op.def(), op.workspace());
  // The op's stream already waits for the inputs' producers; the fallback
  // copies on it and returns once its outputs are on the GPU.
  fallback_->RunOnStream(context.stream_id());
}

namespace {

const bool kRegistered = [] {
  OperatorRegistry::RegisterFallback(
      DeviceKind::kCUDA,
      [](const OperatorDef& def, Workspace* workspace, const OperatorCreator& cpu) {
        return std::unique_ptr<OperatorBase>(new CudaFallbackOp(def, workspace, cpu));
      });
  return true;
}();

}  // namespace
}  // namespace doppio
