// Launchers of the small kernels the cuBLAS-based FC ops need around their
// GEMMs (plain types only: this header is compiled by nvcc and g++).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace doppio {

// y[m, n] += bias[n] for a row-major [rows, cols] matrix y, then
// y = max(y, 0) when `relu` (FC's fusion_type 1).
void LaunchAddRowBias(int64_t rows, int64_t cols, const float* bias, bool relu, float* y,
                      cudaStream_t stream);
void LaunchAddRowBias(int64_t rows, int64_t cols, const double* bias, bool relu, double* y,
                      cudaStream_t stream);

// sums[n] = sum over m of x[m, n], for a row-major [rows, cols] matrix x
// (the bias gradient). Deterministic: a fixed reduction order, no atomics.
void LaunchColumnSums(int64_t rows, int64_t cols, const float* x, float* sums,
                      cudaStream_t stream);
void LaunchColumnSums(int64_t rows, int64_t cols, const double* x, double* sums,
                      cudaStream_t stream);

}  // namespace doppio
