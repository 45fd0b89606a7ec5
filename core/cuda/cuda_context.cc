#include "core/cuda/cuda_context.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_common.h"

namespace doppio {
namespace {

// Streams and handles live for the process: ops come and go, and creating a
// stream or a cuDNN handle costs milliseconds. They are never destroyed, as
// destroying them at exit races the CUDA runtime's own teardown.
struct StreamPool {
  std::mutex mutex;
  std::map<std::pair<int, int>, cudaStream_t> streams;
  std::map<cudaStream_t, cublasHandle_t> cublas_handles;
  std::map<cudaStream_t, cudnnHandle_t> cudnn_handles;
};

StreamPool& Pool() {
  static StreamPool* pool = new StreamPool();
  return *pool;
}

}  // namespace

cudaStream_t CudaStreamFor(int device, int worker) {
  EnforceValidCudaDevice(device, "CudaStreamFor");
  DOPPIO_ENFORCE(worker >= 0, "CudaStreamFor: worker ", worker, " is negative");
  StreamPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  cudaStream_t& stream = pool.streams[{device, worker}];
  if (stream == nullptr) {
    CudaDeviceGuard guard(device);
    cudaStream_t created = nullptr;
    DOPPIO_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    stream = created;
  }
  return stream;
}

cublasHandle_t CublasHandleFor(int device, cudaStream_t stream) {
  StreamPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  cublasHandle_t& handle = pool.cublas_handles[stream];
  if (handle == nullptr) {
    CudaDeviceGuard guard(device);
    cublasHandle_t created = nullptr;
    DOPPIO_CUBLAS_CHECK(cublasCreate(&created));
    DOPPIO_CUBLAS_CHECK(cublasSetStream(created, stream));
    // Scalars (alpha, beta) come from host memory, as in Caffe2's GEMM calls.
    DOPPIO_CUBLAS_CHECK(cublasSetPointerMode(created, CUBLAS_POINTER_MODE_HOST));
    handle = created;
  }
  return handle;
}

cudnnHandle_t CudnnHandleFor(int device, cudaStream_t stream) {
  StreamPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  cudnnHandle_t& handle = pool.cudnn_handles[stream];
  if (handle == nullptr) {
    CudaDeviceGuard guard(device);
    cudnnHandle_t created = nullptr;
    DOPPIO_CUDNN_CHECK(cudnnCreate(&created));
    DOPPIO_CUDNN_CHECK(cudnnSetStream(created, stream));
    handle = created;
  }
  return handle;
}

CUDAEvent::CUDAEvent(int device) : device_(device) {
  CudaDeviceGuard guard(device);
  DOPPIO_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

CUDAEvent::~CUDAEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

void CUDAEvent::Record(cudaStream_t stream) {
  CudaDeviceGuard guard(device_);
  DOPPIO_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void CUDAEvent::Block(cudaStream_t stream) const {
  DOPPIO_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

bool CUDAEvent::Query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  DOPPIO_CUDA_CHECK(status);
  return true;
}

void CUDAEvent::Synchronize() const { DOPPIO_CUDA_CHECK(cudaEventSynchronize(event_)); }

namespace {

class CudaAsyncEvent final : public AsyncEvent {
 public:
  explicit CudaAsyncEvent(int device) : event_(device) {}

  void Record(int stream_id) override {
    event_.Record(CudaStreamFor(event_.device(), stream_id));
  }
  void Block(int device, int stream_id) const override {
    // A stream may wait for an event of another device.
    event_.Block(CudaStreamFor(device, stream_id));
  }
  void Synchronize() const override {
    try {
      event_.Synchronize();
    } catch (Error& error) {
      error.AppendContext(
          "(CUDA reports a failed kernel at the next wait, not at its launch: run with "
          "CUDA_LAUNCH_BLOCKING=1 to have the failing kernel's op named exactly)");
      throw;
    }
  }

 private:
  CUDAEvent event_;
};

class CudaAsyncBackendImpl final : public AsyncBackend {
 public:
  const char* name() const override { return "CUDA"; }
  std::unique_ptr<AsyncEvent> CreateEvent(int device) const override {
    EnforceValidCudaDevice(device, "a CUDA event");
    return std::make_unique<CudaAsyncEvent>(device);
  }
};

}  // namespace

const AsyncBackend* CudaAsyncBackend() {
  static const CudaAsyncBackendImpl* backend = new CudaAsyncBackendImpl();
  return backend;
}

CUDAContext::CUDAContext(const DeviceOption& option)
    : gpu_id_(option.cuda_gpu_id()),
      has_seed_(option.has_random_seed()),
      seed_(option.random_seed()) {
  EnforceValidCudaDevice(gpu_id_, "CUDAContext");
  // Once per process: cross-device copies and NCCL then go peer-to-peer.
  EnableCudaPeerAccess();
}

void CUDAContext::SwitchToDevice(int stream_id) {
  DOPPIO_ENFORCE(stream_id >= 0, "CUDAContext: stream id ", stream_id, " is negative");
  stream_id_ = stream_id;
  DOPPIO_CUDA_CHECK(cudaSetDevice(gpu_id_));
  SetCurrentCUDAStream(gpu_id_, cuda_stream());
}

void CUDAContext::FinishDeviceComputation() {
  DOPPIO_CUDA_CHECK(cudaStreamSynchronize(cuda_stream()));
  DOPPIO_CUDA_CHECK(cudaGetLastError());
}

cudaStream_t CUDAContext::cuda_stream() const { return CudaStreamFor(gpu_id_, stream_id_); }

cublasHandle_t CUDAContext::cublas_handle() const {
  return CublasHandleFor(gpu_id_, cuda_stream());
}

cudnnHandle_t CUDAContext::cudnn_handle() const { return CudnnHandleFor(gpu_id_, cuda_stream()); }

void CUDAContext::CopyBytes(size_t nbytes, const void* source, void* destination) {
  if (nbytes == 0) return;
  DOPPIO_CUDA_CHECK(
      cudaMemcpyAsync(destination, source, nbytes, cudaMemcpyDefault, cuda_stream()));
}

void CUDAContext::CreateGenerator() {
  generator_ = std::make_unique<std::mt19937>(has_seed_ ? seed_ : std::random_device{}());
}

}  // namespace doppio
