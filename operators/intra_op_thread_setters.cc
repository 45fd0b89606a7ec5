// Registers how the math libraries' own thread pools are capped, so nets can
// apply their intra-op thread count (core/intra_op_threads.h) without core/
// knowing the libraries.

#include <cblas.h>
#include <omp.h>

#include "core/intra_op_threads.h"

namespace doppio {
namespace {

// OpenBLAS (pthreads build) keeps one process-wide thread count for GEMM.
IntraOpThreadSetterRegisterer openblas_threads("openblas", IntraOpSetterScope::kProcessWide,
                                               [](int threads) {
                                                 openblas_set_num_threads(threads);
                                               });

// oneDNN runs on OpenMP, whose thread count is a property of the thread that
// starts a parallel region: set it on every thread that runs ops.
IntraOpThreadSetterRegisterer openmp_threads("openmp (oneDNN)", IntraOpSetterScope::kPerThread,
                                             [](int threads) { omp_set_num_threads(threads); });

}  // namespace
}  // namespace doppio
