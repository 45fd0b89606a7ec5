// The CUDA device allocator (a CachingAllocator over cudaMalloc/cudaFree and
// CUDA events) and pinned host memory for fast, asynchronous copies.
//
// Allocator::Allocate/Free carry no stream, so a host thread's current
// stream per device says which stream a block is for: CUDAContext sets it in
// SwitchToDevice, as PyTorch's current stream does. A thread that never set
// one uses the null stream.
//
// Caching is on unless the environment sets DOPPIO_CUDA_CACHING_ALLOCATOR=0
// (read once, when the allocator is first used).
#pragma once

#include <cuda_runtime.h>

#include "core/allocator.h"
#include "core/cuda/caching_allocator.h"

namespace doppio {

// Registered as GetAllocator(DeviceKind::kCUDA) by linking //core/cuda.
// Allocates on the calling thread's current device; throws doppio::Error
// when there is no CUDA device (with the reason) or when it is out of memory.
Allocator* GetCUDAAllocator();
// The bookkeeping behind it, for stats and EmptyCache.
CachingAllocator& GetCUDACachingAllocator();
// True unless DOPPIO_CUDA_CACHING_ALLOCATOR is "0" (or "false"/"off").
bool CUDACachingEnabledByEnvironment();

// The calling thread's current stream on `device` (the null stream unless
// set).
cudaStream_t CurrentCUDAStream(int device);
void SetCurrentCUDAStream(int device, cudaStream_t stream);

// Page-locked host memory (cudaHostAlloc): copies from and to it are truly
// asynchronous and run at full bus speed.
Allocator* GetPinnedHostAllocator();

}  // namespace doppio
