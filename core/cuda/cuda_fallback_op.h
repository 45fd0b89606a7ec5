// The CUDA fallback: an op type with a CPU kernel but no CUDA kernel still
// runs under a CUDA device option, as with Caffe2's GPUFallbackOp. The op
// copies its tensor inputs to the host, runs the CPU kernel there and
// copies the outputs back to its GPU, so a net placed on a GPU keeps working
// when one of its ops (Reshape, Cast, Transpose, LayerNorm ...) has no
// device kernel; it costs a host round trip and a stream sync per run.
//
// The CPU kernel runs in the op's own workspace under the blobs' own names
// (ops that read names, such as Save, see the same ones), so in-place forms
// stay in place. Only tensors travel: a blob holding anything else (a DB
// cursor, a common world) is an error naming it. CreateOperator picks this
// op by itself (core/registry.h); registering it is this file's side effect.
// A CUDA op whose library cannot take some problems (cuDNN: asymmetric pads,
// ranks it lacks, no algorithm within the limits) hands those to the same
// fallback through CudaCpuFallback.
//
// Thread-safety: as any op, run by one thread at a time.
#pragma once

#include <memory>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "core/workspace.h"

namespace doppio {

class CudaFallbackOp final : public Operator<CUDAContext> {
 public:
  // `cpu` builds the CPU kernel of def's type.
  CudaFallbackOp(const OperatorDef& def, Workspace* workspace, const OperatorCreator& cpu);

  void RunOnDevice() override;
  // It reads device data on the host.
  bool NeedsHostSync() const override { return true; }

 private:
  void CopyInputsToHost();
  void CopyOutputsToDevice();

  Workspace host_;  // the CPU kernel's blobs, named as the op's
  std::unique_ptr<OperatorBase> cpu_op_;
};

// The fallback op of `def` (whose type must have a CPU kernel) in
// `workspace`.
std::unique_ptr<OperatorBase> CreateCudaFallback(const OperatorDef& def, Workspace* workspace);

// Held by a CUDA op: runs the op's CPU kernel through the fallback on the
// op's current stream, returning with the outputs on the GPU. The fallback
// op is made on first use.
class CudaCpuFallback {
 public:
  void Run(const OperatorBase& op, const CUDAContext& context);

 private:
  std::unique_ptr<OperatorBase> fallback_;
};

}  // namespace doppio
