// Checks shared by the ops that address rows of a tensor through an index
// tensor: Gather, ScatterAssign, the lengths reducers, the segment ops and the
// sparse optimizers.
//
// Indices come from data we did not write, so every op range-checks all of
// them before it writes anything: a bad index is an error naming the op, the
// index blob, the position and the valid range, never a stray write.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

// Throws unless indices[0..count) all lie in [0, bound), where bound is the
// first dimension of input `bound_input`.
template <typename Index>
void CheckIndicesInRange(const OperatorBase& op, int indices_input, const Index* indices,
                         int64_t count, int64_t bound, int bound_input) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0 || index >= bound) {
      DOPPIO_THROW("index ", index, " at position ", i, " of '", op.input_name(indices_input),
                   "' is out of range [0, ", bound, ") of the first dimension of '",
                   op.input_name(bound_input), "'");
    }
  }
}

// The int32/int64 indices (input `indices_input`, any shape) as int64 row
// numbers, each checked to lie in [0, bound) of the first dimension of input
// `bound_input` (CheckIndicesInRange's error).
std::vector<int64_t> ReadRowIndices(const OperatorBase& op, int indices_input,
                                    const Tensor& indices, int64_t bound, int bound_input);

// Throws unless input `input` has at least one dimension (its rows are what
// the op indexes).
void EnforceHasRows(const OperatorBase& op, int input, const Tensor& tensor);

// Throws unless input `input` is one-dimensional.
void EnforceVector(const OperatorBase& op, int input, const Tensor& tensor);

// `leading` followed by dims[1:] of `tensor`: the shape of a tensor that
// holds one row of `tensor` (or of its gradient) per position of `leading`.
std::vector<int64_t> ShapeOfRows(std::vector<int64_t> leading, const Tensor& tensor);

// Shape inference for such an output when `leading` is the length of the
// vector input `count_input` (a segment's lengths or ids) and the rows are
// input 0's.
OpSchema::InferenceFunction InferRowsPerEntry(int count_input);

}  // namespace doppio
