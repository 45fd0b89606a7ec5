// Dense linear algebra for CPU kernels, on OpenBLAS's CBLAS. All matrices
// are row-major (Caffe2's convention); `trans_a`/`trans_b` transpose the
// operands as stored.
//
// Thread-safety: reentrant; OpenBLAS threads within a call.
#pragma once

#include <cstdint>

namespace doppio {
namespace blas {

// C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
          const T* A, const T* B, T beta, T* C);

// For b in [0, batch): C_b = alpha * op(A_b) * op(B_b) + beta * C_b, with
// the operands batch_stride_{a,b,c} elements apart.
template <typename T>
void GemmStridedBatched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                        int64_t K, T alpha, const T* A, int64_t stride_a, const T* B,
                        int64_t stride_b, T beta, T* C, int64_t stride_c);

// y[M or N] = alpha * op(A)[M x N] * x + beta * y
template <typename T>
void Gemv(bool trans_a, int64_t M, int64_t N, T alpha, const T* A, const T* x, T beta, T* y);

}  // namespace blas
}  // namespace doppio
