#include "operators/blas.h"

#include <cblas.h>

#include <limits>

#include "core/enforce.h"

namespace doppio {
namespace blas {
namespace {

// CBLAS takes int sizes; larger matrices must be split by the caller.
blasint ToBlasInt(int64_t value, const char* what) {
  DOPPIO_ENFORCE(value >= 0 && value <= std::numeric_limits<blasint>::max(), "GEMM ", what,
                 " = ", value, " is out of range for BLAS");
  return static_cast<blasint>(value);
}

CBLAS_TRANSPOSE Trans(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

}  // namespace

template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, const float* B, float beta, float* C) {
  if (M == 0 || N == 0) return;
  const blasint lda = ToBlasInt(trans_a ? M : K, "lda");
  const blasint ldb = ToBlasInt(trans_b ? K : N, "ldb");
  cblas_sgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), ToBlasInt(M, "M"),
              ToBlasInt(N, "N"), ToBlasInt(K, "K"), alpha, A, lda > 0 ? lda : 1, B,
              ldb > 0 ? ldb : 1, beta, C, ToBlasInt(N, "ldc"));
}

template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                  const double* A, const double* B, double beta, double* C) {
  if (M == 0 || N == 0) return;
  const blasint lda = ToBlasInt(trans_a ? M : K, "lda");
  const blasint ldb = ToBlasInt(trans_b ? K : N, "ldb");
  cblas_dgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), ToBlasInt(M, "M"),
              ToBlasInt(N, "N"), ToBlasInt(K, "K"), alpha, A, lda > 0 ? lda : 1, B,
              ldb > 0 ? ldb : 1, beta, C, ToBlasInt(N, "ldc"));
}

template <typename T>
void GemmStridedBatched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                        int64_t K, T alpha, const T* A, int64_t stride_a, const T* B,
                        int64_t stride_b, T beta, T* C, int64_t stride_c) {
  for (int64_t b = 0; b < batch; ++b) {
    Gemm<T>(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, B + b * stride_b, beta,
            C + b * stride_c);
  }
}

template void GemmStridedBatched<float>(bool, bool, int64_t, int64_t, int64_t, int64_t, float,
                                        const float*, int64_t, const float*, int64_t, float,
                                        float*, int64_t);
template void GemmStridedBatched<double>(bool, bool, int64_t, int64_t, int64_t, int64_t,
                                         double, const double*, int64_t, const double*, int64_t,
                                         double, double*, int64_t);

template <>
void Gemv<float>(bool trans_a, int64_t M, int64_t N, float alpha, const float* A,
                 const float* x, float beta, float* y) {
  if (M == 0 || N == 0) return;
  cblas_sgemv(CblasRowMajor, Trans(trans_a), ToBlasInt(M, "M"), ToBlasInt(N, "N"), alpha, A,
              ToBlasInt(N, "lda"), x, 1, beta, y, 1);
}

template <>
void Gemv<double>(bool trans_a, int64_t M, int64_t N, double alpha, const double* A,
                  const double* x, double beta, double* y) {
  if (M == 0 || N == 0) return;
  cblas_dgemv(CblasRowMajor, Trans(trans_a), ToBlasInt(M, "M"), ToBlasInt(N, "N"), alpha, A,
              ToBlasInt(N, "lda"), x, 1, beta, y, 1);
}

}  // namespace blas
}  // namespace doppio
