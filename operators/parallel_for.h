// ParallelFor: a loop over independent elements split across the calling
// thread's intra-op threads (OpenMP, the pool oneDNN's kernels use too; the
// net sets its size, see core/intra_op_threads.h).
//
// Why: with 2 intra-op threads the GEMMs of a training step keep both cores
// busy, and every single-threaded op between them (the momentum update,
// Relu, the input's Cast/Add/Scale) leaves the second thread spinning: ~25%
// of the reference MLP's step. Each thread takes one contiguous range, so a
// loop whose elements are independent gives the same bits however it is
// split.
//
// `body(begin, end)` must not throw (an exception cannot leave an OpenMP
// region) and must touch only elements in [begin, end).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace doppio {

// Below this many elements per thread a pointwise loop is cheaper than
// waking a second thread (~1-2 us to start an OpenMP region).
constexpr int64_t kParallelForMinPerThread = 16 * 1024;

// ParallelFor's min_per_thread for a loop over rows of `row_size` elements:
// at least kParallelForMinPerThread elements per thread, and one row.
constexpr int64_t RowsPerThread(int64_t row_size) {
  return std::max<int64_t>(1, kParallelForMinPerThread / std::max<int64_t>(1, row_size));
}

template <typename Body>
void ParallelFor(int64_t n, Body&& body, int64_t min_per_thread = kParallelForMinPerThread) {
  if (n <= 0) return;
  const int64_t by_size = n / std::max<int64_t>(1, min_per_thread);
  const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), by_size));
  if (threads <= 1 || omp_in_parallel()) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t count = omp_get_num_threads();
    const int64_t index = omp_get_thread_num();
    // Ranges start on 64-byte boundaries of float arrays, so two threads
    // never write one cache line.
    const int64_t chunk = ((n + count - 1) / count + 15) & ~int64_t{15};
    const int64_t begin = std::min(n, index * chunk);
    const int64_t end = std::min(n, begin + chunk);
    if (begin < end) body(begin, end);
  }
}

// For a few coarse tasks of about equal cost (a convolution's 36 tile
// GEMMs): body(i) for i in [0, n), each thread taking a contiguous run of
// about n / threads tasks (ParallelFor's 16-element ranges would give one
// thread 32 of 36). Tasks must be independent; body must not throw.
template <typename Body>
void ParallelForTasks(int64_t n, Body&& body) {
  if (n <= 0) return;
  const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), n));
  if (threads <= 1 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace doppio
