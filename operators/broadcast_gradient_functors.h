// The gradients of the broadcasting binary ops (AddGradient, SubGradient,
// MulGradient, DivGradient) and SumReduceLike, written once for the host
// (g++) and the device (nvcc): per output element, a functor gives each
// input's part; a BroadcastReducer names the output elements that fold onto
// one element of a broadcast input, whose parts are summed.
//
// The CPU ops take the per-element math from here (their broadcast walk is
// an odometer, elementwise_ops_utils.h); the CUDA kernels
// (elementwise_gradient_op_gpu.cu) give each element of a reduced input one
// block that sums its parts. CpuReduceToShape below is the host
// instantiation of that very kernel, checked against references in
// tests/operators/loss_math_functors_test.cc.
//
// Plain C++ only (no core headers), so nvcc can include it without the
// generated proto header.
#pragma once

#include <cstdint>
#include <vector>

#include "operators/elementwise_functors.h"

namespace doppio {
namespace functors {

// ---- per-element gradients: (dc, a, b, c) -> (da, db) ----
// kNeedsA/B/C: which forward values a gradient reads (the others may be
// absent and are passed as 0).

struct AddGradient {
  static constexpr bool kNeedsA = false, kNeedsB = false, kNeedsC = false;
  template <typename T>
  DOPPIO_HOST_DEVICE void operator()(T dc, T, T, T, T* da, T* db) const {
    *da = dc;
    *db = dc;
  }
};

struct SubGradient {
  static constexpr bool kNeedsA = false, kNeedsB = false, kNeedsC = false;
  template <typename T>
  DOPPIO_HOST_DEVICE void operator()(T dc, T, T, T, T* da, T* db) const {
    *da = dc;
    *db = static_cast<T>(-dc);
  }
};

struct MulGradient {
  static constexpr bool kNeedsA = true, kNeedsB = true, kNeedsC = false;
  template <typename T>
  DOPPIO_HOST_DEVICE void operator()(T dc, T a, T b, T, T* da, T* db) const {
    *da = static_cast<T>(dc * b);
    *db = static_cast<T>(dc * a);
  }
};

// From C = A / B: dA = dC / B and dB = -dC * C / B (C spares reading A).
struct DivGradient {
  static constexpr bool kNeedsA = false, kNeedsB = true, kNeedsC = true;
  template <typename T>
  DOPPIO_HOST_DEVICE void operator()(T dc, T, T b, T c, T* da, T* db) const {
    *da = dc / b;
    *db = -dc * c / b;
  }
};

// ---- reducing the iteration space onto a broadcast input ----

// For a target shape (at the iteration space's rank, 1 along the dims it is
// broadcast): output element OutIndex(t, r) for r in [0, reduce_count) are
// the elements that fold onto target element t. A plain struct of fixed
// arrays, passed to kernels by value.
struct BroadcastReducer {
  static constexpr int kMaxDims = BroadcastIndexMapper::kMaxDims;
  int ndim = 0;
  int64_t target_dims[kMaxDims] = {};   // the target's dim, 1 where reduced
  int64_t reduced_dims[kMaxDims] = {};  // the output's dim where reduced, else 1
  int64_t out_strides[kMaxDims] = {};
  int64_t target_count = 1;
  int64_t reduce_count = 1;

  DOPPIO_HOST_DEVICE int64_t OutIndex(int64_t target, int64_t r) const {
    int64_t index = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      // At most one of the two is non-zero: a dim is kept or reduced.
      const int64_t kept = target % target_dims[d];
      const int64_t reduced = r % reduced_dims[d];
      target /= target_dims[d];
      r /= reduced_dims[d];
      index += (kept + reduced) * out_strides[d];
    }
    return index;
  }
};

// The reducer from `target` onto which `out` folds. False when the ranks
// differ, exceed kMaxDims, or a target dim is neither 1 nor out's.
inline bool MakeBroadcastReducer(const std::vector<int64_t>& target,
                                 const std::vector<int64_t>& out, BroadcastReducer* reducer) {
  const int ndim = static_cast<int>(out.size());
  if (ndim > BroadcastReducer::kMaxDims || target.size() != out.size()) return false;
  reducer->ndim = ndim;
  reducer->target_count = 1;
  reducer->reduce_count = 1;
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    const bool reduced = target[d] == 1 && out[d] != 1;
    if (!reduced && target[d] != out[d]) return false;
    reducer->target_dims[d] = reduced ? 1 : out[d];
    reducer->reduced_dims[d] = reduced ? out[d] : 1;
    reducer->out_strides[d] = stride;
    reducer->target_count *= reducer->target_dims[d];
    reducer->reduce_count *= reducer->reduced_dims[d];
    stride *= out[d];
  }
  return true;
}

// The part of input `which` (0: A, 1: B) of a binary gradient at output
// element i. Absent inputs (the functor does not need them) are null.
template <typename F, typename T>
struct BinaryGradientPart {
  F gradient;
  BroadcastIndexMapper mapper;
  const T* dc;
  const T* a;
  const T* b;
  const T* c;
  int which;

  DOPPIO_HOST_DEVICE T operator()(int64_t i) const {
    int64_t ia, ib;
    mapper.Map(i, &ia, &ib);
    T da, db;
    gradient(dc[i], a != nullptr ? a[ia] : T(0), b != nullptr ? b[ib] : T(0),
             c != nullptr ? c[i] : T(0), &da, &db);
    return which == 0 ? da : db;
  }
};

// SumReduceLike's part at output element i: the element itself.
template <typename T>
struct ValueAt {
  const T* values;
  DOPPIO_HOST_DEVICE T operator()(int64_t i) const { return values[i]; }
};

// ---- CPU launcher: the host instantiation of the CUDA reduction ----

// target[t] = sum over r of part(OutIndex(t, r)), summed in double.
template <typename T, typename Part>
void CpuReduceToShape(const BroadcastReducer& reducer, const Part& part, T* target) {
  for (int64_t t = 0; t < reducer.target_count; ++t) {
    double sum = 0;
    for (int64_t r = 0; r < reducer.reduce_count; ++r) {
      sum += static_cast<double>(part(reducer.OutIndex(t, r)));
    }
    target[t] = static_cast<T>(sum);
  }
}

}  // namespace functors
}  // namespace doppio
