// A device fill, the first kernel compiled by nvcc (tools/cuda.bzl). The
// context test uses it to check that kernels run on a worker's stream.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace doppio {

// Queues data[0..count) = value on `stream`; throws doppio::Error if the
// launch fails.
void LaunchFillFloat(float* data, size_t count, float value, cudaStream_t stream);

}  // namespace doppio
