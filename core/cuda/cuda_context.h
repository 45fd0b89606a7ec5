// CUDAContext: what an Operator<CUDAContext> needs to run on a GPU, in
// CPUContext's shape (core/context.h). Each (device, worker) pair has its own
// stream, made on first use and kept for the process; a net's worker passes
// its index as the stream id to SwitchToDevice. cuBLAS and cuDNN handles are
// bound to one stream each, also made on first use. Ops never synchronize the
// device: cross-stream order comes from CUDAEvent, placed by the net
// executors through CudaAsyncBackend() (core/event.h, core/event_schedule.h).
//
// Thread-safety: a context belongs to one op, run by one thread at a time;
// the stream and handle pools behind it may be used from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/allocator.h"
#include "core/event.h"
#include "core/random_state.h"
#include "proto/doppio.pb.h"

namespace doppio {

// The stream of worker `worker` on `device` (non-blocking: it does not wait
// for the legacy null stream).
cudaStream_t CudaStreamFor(int device, int worker);
// Handles bound to `stream` on `device`; one per stream, so ops on different
// workers never share a handle.
cublasHandle_t CublasHandleFor(int device, cudaStream_t stream);
cudnnHandle_t CudnnHandleFor(int device, cudaStream_t stream);

// The streams above as the net executors see them (core/event.h): stream s
// of device d is CudaStreamFor(d, s); its events are CUDAEvents. A failure
// of queued work (an illegal address in a kernel) surfaces when an event
// recorded after it is waited for on the host.
const AsyncBackend* CudaAsyncBackend();

// A point in a stream's queue that other streams (or the host) can wait for.
class CUDAEvent {
 public:
  explicit CUDAEvent(int device);
  ~CUDAEvent();
  CUDAEvent(const CUDAEvent&) = delete;
  CUDAEvent& operator=(const CUDAEvent&) = delete;

  // Marks the end of the work queued on `stream` so far.
  void Record(cudaStream_t stream);
  // Makes `stream` wait (on the device, not the host) for the recorded point.
  void Block(cudaStream_t stream) const;
  bool Query() const;
  void Synchronize() const;
  int device() const { return device_; }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

class CUDAContext {
 public:
  static constexpr DeviceKind kDeviceKind = DeviceKind::kCUDA;

  CUDAContext() : CUDAContext(DeviceOption()) {}
  // Throws doppio::Error when option.cuda_gpu_id() is not a usable device
  // (with the reason when there is no GPU at all).
  explicit CUDAContext(const DeviceOption& option);

  Device device() const { return Device{DeviceKind::kCUDA, gpu_id_}; }
  int cuda_gpu_id() const { return gpu_id_; }
  // The worker stream SwitchToDevice last selected.
  int stream_id() const { return stream_id_; }

  // Makes the op's device current and selects worker `stream_id`'s stream,
  // also as the thread's current stream for the CUDA allocator.
  void SwitchToDevice(int stream_id = 0);
  // Waits for the op's stream and reports a failed kernel as doppio::Error.
  // Operator<CUDAContext>::Run calls it; nets running the op on a stream do
  // not (unless the op needs a host sync), they order it with events.
  void FinishDeviceComputation();
  // CUDA work is queued on the device's streams (see core/event.h).
  StreamPlacement stream_placement() const { return {CudaAsyncBackend(), gpu_id_, true}; }

  cudaStream_t cuda_stream() const;
  cublasHandle_t cublas_handle() const;
  cudnnHandle_t cudnn_handle() const;

  // Host-side generator, as CPUContext's (seeded from random_seed if set).
  std::mt19937& RandGenerator() {
    if (!generator_) CreateGenerator();
    return *generator_;
  }
  // The generator's state ("" before its first use) and back
  // (core/random_state.h).
  std::string RandomState() const { return GeneratorState(generator_); }
  void SetRandomState(const std::string& state) { SetGeneratorState(state, &generator_); }

  // Asynchronous on the op's stream; either side may be host or device
  // memory (pinned host memory makes it truly asynchronous).
  void CopyBytes(size_t nbytes, const void* source, void* destination);

  // Cross-stream order: record after producing, wait before consuming.
  void RecordEvent(CUDAEvent& event) const { event.Record(cuda_stream()); }
  void WaitEvent(const CUDAEvent& event) const { event.Block(cuda_stream()); }

 private:
  void CreateGenerator();

  int gpu_id_ = 0;
  int stream_id_ = 0;
  bool has_seed_ = false;
  uint32_t seed_ = 0;
  std::unique_ptr<std::mt19937> generator_;
};

}  // namespace doppio
