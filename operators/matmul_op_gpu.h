// Row-major GEMM on cuBLAS for the CUDA FC and MatMul ops (plain types only).
//
// Float32 runs with exact float32 arithmetic unless `allow_tf32` (the
// TENSORCORE engine), so CUDA results match the CPU's to rounding.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace doppio {

// C[rows, cols] = alpha * op(A) op(B) + beta * C, all row-major: op(A) is
// [rows, inner] (A stored [inner, rows] when trans_a), op(B) is [inner, cols]
// (B stored [cols, inner] when trans_b). Runs on `stream` through `handle`.
// Sizes beyond cuBLAS's int range throw doppio::Error naming `op`.
void RowMajorGemm(cublasHandle_t handle, cudaStream_t stream, bool allow_tf32, bool trans_a,
                  bool trans_b, int64_t rows, int64_t cols, int64_t inner, float alpha,
                  const float* A, const float* B, float beta, float* C, const char* op);
void RowMajorGemm(cublasHandle_t handle, cudaStream_t stream, bool allow_tf32, bool trans_a,
                  bool trans_b, int64_t rows, int64_t cols, int64_t inner, double alpha,
                  const double* A, const double* B, double beta, double* C, const char* op);

}  // namespace doppio
