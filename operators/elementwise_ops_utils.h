// Broadcasting for binary elementwise ops and their gradients.
//
// Two rules exist, as in Caffe2:
//   - numpy ("multidirectional") broadcasting, the default: shapes are
//     aligned at the right and each pair of dims must be equal or contain a
//     1;
//   - legacy broadcasting (argument broadcast=1): B's shape, stripped of
//     leading and trailing 1s, must match a contiguous run of A's dims
//     starting at `axis` (by default, B is aligned with A's last dims); the
//     output has A's shape. A one-element B is a scalar.
// Both are reduced to a plan: A's, B's and the output's dims at equal rank,
// with 1 where a tensor is broadcast. The kernels below walk such a plan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"
#include "core/tensor.h"
#include "operators/parallel_for.h"

namespace doppio {

// Caffe2's broadcast arguments: broadcast (legacy mode), axis, axis_str and
// order ("NCHW": axis_str "C" means axis 1).
struct BroadcastArgs {
  bool legacy = false;
  int axis = -1;
};
// `always_legacy` is for ops that only know the legacy rule (SumReduceLike).
BroadcastArgs ReadBroadcastArgs(const OperatorBase& op, bool always_legacy = false);

// An input's name and shape, for plans and their error messages.
struct NamedShape {
  const std::string& name;
  const std::vector<int64_t>& dims;
};

// Output shape under numpy broadcasting; the error names the op and both
// inputs with their shapes.
std::vector<int64_t> NumpyBroadcastDims(const OperatorBase& op, const NamedShape& a,
                                        const NamedShape& b);

struct BroadcastPlan {
  std::vector<int64_t> a;    // A's dims at the plan's rank
  std::vector<int64_t> b;    // B's dims at the plan's rank (1 = broadcast)
  std::vector<int64_t> out;  // the iteration space, same rank
  std::vector<int64_t> output_dims;  // the real output shape
};

// The plan for C = f(A, B).
BroadcastPlan PlanBroadcast(const OperatorBase& op, const BroadcastArgs& args,
                            const NamedShape& a, const NamedShape& b);

// Legacy broadcasting of B over A from `axis` (-1: align the last dims):
// A viewed as [pre, n, post] and B (without its outer 1s) as [n].
struct LegacySizes {
  int64_t pre = 1, n = 1, post = 1;
};
LegacySizes LegacyBroadcastSizes(const OperatorBase& op, const NamedShape& a,
                                 const NamedShape& b, int axis);

namespace broadcast_detail {

// Row-major strides of `dims` inside `out`, 0 along broadcast dims.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(dims.size(), 0);
  int64_t stride = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    strides[i] = (dims[i] == 1 && out[i] != 1) ? 0 : stride;
    stride *= dims[i];
  }
  return strides;
}

// Calls visit(out_index, a_offset, b_offset) for every element of `out`,
// with the offsets of the A and B elements it combines; the last dim is a
// plain inner loop.
template <typename Visit>
void ForEachBroadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      const std::vector<int64_t>& out, Visit&& visit) {
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  const int ndim = static_cast<int>(out.size());
  if (ndim == 0) {
    visit(0, 0, 0);
    return;
  }
  const std::vector<int64_t> a_strides = Strides(a, out);
  const std::vector<int64_t> b_strides = Strides(b, out);
  const int64_t inner = out[ndim - 1];
  const int64_t a_inner = a_strides[ndim - 1];
  const int64_t b_inner = b_strides[ndim - 1];
  std::vector<int64_t> index(ndim, 0);
  int64_t a_offset = 0, b_offset = 0;
  for (int64_t k = 0; k < total; k += inner) {
    for (int64_t j = 0; j < inner; ++j) {
      visit(k + j, a_offset + j * a_inner, b_offset + j * b_inner);
    }
    // Advance the outer index like an odometer, keeping the offsets in step.
    for (int d = ndim - 2; d >= 0; --d) {
      ++index[d];
      a_offset += a_strides[d];
      b_offset += b_strides[d];
      if (index[d] < out[d]) break;
      a_offset -= a_strides[d] * out[d];
      b_offset -= b_strides[d] * out[d];
      index[d] = 0;
    }
  }
}

// ForEachBroadcast's walk split by rows of the last dim over the intra-op
// threads, each row's inner loop specialized for an operand that is
// contiguous (stride 1) or repeated (stride 0) along it, so it vectorizes:
// SE blocks' [N, C, H, W] * [N, C, 1, 1] gate was 18% of EfficientNet-B0 as
// a per-element callback on one thread. Elements are independent, so any
// split gives the same bits; fn must not throw.
template <typename T, typename R, typename Fn>
void BroadcastRows(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                   const std::vector<int64_t>& out, const T* av, const T* bv, R* c, Fn fn) {
  const int ndim = static_cast<int>(out.size());
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0 || ndim == 0) {
    if (total != 0) c[0] = fn(av[0], bv[0]);
    return;
  }
  const std::vector<int64_t> a_strides = Strides(a, out);
  const std::vector<int64_t> b_strides = Strides(b, out);
  const int64_t inner = out[ndim - 1];
  const int64_t a_inner = a_strides[ndim - 1], b_inner = b_strides[ndim - 1];
  const int64_t rows = total / inner;
  auto run_rows = [&](int64_t begin, int64_t end) {
    // The offsets of row `begin`, then an odometer over the outer dims.
    std::vector<int64_t> index(ndim, 0);
    int64_t a_offset = 0, b_offset = 0;
    for (int64_t d = ndim - 2, r = begin; d >= 0; --d) {
      index[d] = r % out[d];
      r /= out[d];
      a_offset += index[d] * a_strides[d];
      b_offset += index[d] * b_strides[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      const T* ar = av + a_offset;
      const T* br = bv + b_offset;
      R* cr = c + row * inner;
      if (a_inner == 1 && b_inner == 1) {
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) cr[j] = fn(ar[j], br[j]);
      } else if (a_inner == 1 && b_inner == 0) {
        const T b0 = br[0];
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) cr[j] = fn(ar[j], b0);
      } else if (a_inner == 0 && b_inner == 1) {
        const T a0 = ar[0];
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) cr[j] = fn(a0, br[j]);
      } else {
        for (int64_t j = 0; j < inner; ++j) cr[j] = fn(ar[j * a_inner], br[j * b_inner]);
      }
      for (int d = ndim - 2; d >= 0; --d) {
        ++index[d];
        a_offset += a_strides[d];
        b_offset += b_strides[d];
        if (index[d] < out[d]) break;
        a_offset -= a_strides[d] * out[d];
        b_offset -= b_strides[d] * out[d];
        index[d] = 0;
      }
    }
  };
  ParallelFor(rows, run_rows, RowsPerThread(inner));
}

}  // namespace broadcast_detail

// c[i] = fn(a[ia], b[ib]) over the plan; c's type R may differ from T
// (comparisons write bool). c may alias a or b when it has that input's
// shape and type: every element is read before it is overwritten.
template <typename T, typename R, typename Fn>
void BroadcastBinary(const BroadcastPlan& plan, const T* a, const T* b, R* c, Fn fn) {
  const int64_t a_count = CheckedNumElements(plan.a);
  const int64_t b_count = CheckedNumElements(plan.b);
  const int64_t c_count = CheckedNumElements(plan.out);
  // The pointwise cases split across the intra-op threads; fn must not
  // throw (the ops validate their inputs before calling it).
  if (a_count == c_count && b_count == c_count) {
    ParallelFor(c_count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) c[i] = fn(a[i], b[i]);
    });
  } else if (b_count == 1 && a_count == c_count) {
    const T scalar = b[0];
    ParallelFor(c_count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) c[i] = fn(a[i], scalar);
    });
  } else if (a_count == 1 && b_count == c_count) {
    const T scalar = a[0];
    ParallelFor(c_count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) c[i] = fn(scalar, b[i]);
    });
  } else {
    broadcast_detail::BroadcastRows(plan.a, plan.b, plan.out, a, b, c, fn);
  }
}

// x[...] = sum of dc over the dims along which `x_dims` (at the rank of
// out_dims) is broadcast: the gradient of a broadcast input. x must not
// alias dc.
template <typename T>
void SumToBroadcastShape(const std::vector<int64_t>& out_dims, const T* dc,
                         const std::vector<int64_t>& x_dims, T* x) {
  const int64_t out_count = CheckedNumElements(out_dims);
  const int64_t x_count = CheckedNumElements(x_dims);
  if (x_count == out_count) {
    std::copy(dc, dc + out_count, x);
    return;
  }
  std::fill(x, x + x_count, T(0));
  if (x_count == 1) {
    T total = T(0);
    for (int64_t i = 0; i < out_count; ++i) total += dc[i];
    x[0] = total;
    return;
  }
  broadcast_detail::ForEachBroadcast(
      x_dims, out_dims, out_dims,
      [&](int64_t i, int64_t ix, int64_t /*unused*/) { x[ix] += dc[i]; });
}

}  // namespace doppio
