// Helpers for the ops that view tensors as matrices split at an axis (FC,
// FCTransposed, MatMul, BatchMatMul): axis arguments and the GEMM that also
// covers an empty inner dim. Their dtypes go through op_type_dispatch.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"
#include "operators/blas.h"

namespace doppio {

// The product of dims[begin, end): a matrix's row or column count.
int64_t DimsProduct(const std::vector<int64_t>& dims, size_t begin, size_t end);

// Maps `axis` (argument `arg` of op `op`, applied to blob `blob`) onto
// [0, rank), with an error naming all three.
int CanonicalAxisOf(const std::string& op, const char* arg, int axis, const std::string& blob,
                    const std::vector<int64_t>& dims);

// C[rows x cols] = op(A) op(B); an empty inner dim gives zeros (BLAS need not
// write C then). lda/ldb follow from the stored (untransposed) shapes.
template <typename T>
void MatrixProduct(bool trans_a, bool trans_b, int64_t rows, int64_t cols, int64_t inner,
                   const T* a, const T* b, T* c) {
  if (inner == 0) {
    std::fill(c, c + rows * cols, T(0));
    return;
  }
  blas::Gemm<T>(trans_a, trans_b, rows, cols, inner, T(1), a, b, T(0), c);
}

}  // namespace doppio
