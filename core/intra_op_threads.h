// Intra-op threads: how many threads one op may use inside a math library.
//
// Libraries with thread pools of their own (OpenBLAS, oneDNN through OpenMP)
// would each take every core by default; a net that runs ops of N devices at
// once would then run N x cores threads. Each net therefore has an
// intra-op thread count (the NetDef argument "intra_op_threads", by default
// the cores divided among the workers that may run ops at the same time) and
// applies it on the threads that run its ops.
//
// core/ knows no math library, so the libraries' wrappers (in operators/)
// register a setter here, and nets call ApplyIntraOpThreads.
//
// Thread-safety: everything here may be called from any thread. Setters
// registered as kPerThread act on the calling thread (OpenMP's
// omp_set_num_threads); kProcessWide ones act on the whole process
// (openblas_set_num_threads), so two nets with different settings running at
// the same time share the value set last.
#pragma once

#include <functional>
#include <string>

#include "proto/doppio.pb.h"

namespace doppio {

enum class IntraOpSetterScope { kPerThread, kProcessWide };

using IntraOpThreadSetter = std::function<void(int num_threads)>;

// `name` ("openblas", "openmp") only labels the setter in messages.
void RegisterIntraOpThreadSetter(const std::string& name, IntraOpSetterScope scope,
                                 IntraOpThreadSetter setter);

// More intra-op threads than this is refused: the count comes from NetDefs
// that come from files, and a library asked for 2^31 threads would try to
// start them (as the dag executor caps its num_workers).
constexpr int kMaxIntraOpThreads = 1024;

// Applies `num_threads` (in [1, kMaxIntraOpThreads]) through every
// registered setter, for ops run
// from the calling thread. Cheap when nothing changes: setters are called
// only when the value differs from the one applied last (per thread for
// kPerThread, per process for kProcessWide).
void ApplyIntraOpThreads(int num_threads);

// The cores this process may run on (its CPU affinity), at least 1; fewer
// when the environment variable DOPPIO_NUM_CORES says so (a positive count;
// anything else is ignored). tools/launch.py sets it to each rank's share
// of the machine, as torchrun sets OMP_NUM_THREADS=1, so that N ranks on one
// host do not each size their thread pools for all the cores.
int AvailableCores();

// The net's intra-op thread count: its "intra_op_threads" argument when set
// to an int in [1, kMaxIntraOpThreads], otherwise (argument absent or 0)
// max(1, AvailableCores() / concurrent_workers), where concurrent_workers is
// how many ops the executor may run at once. A negative, non-int or too large
// argument is an error naming the net.
int IntraOpThreadsForNet(const NetDef& net, int concurrent_workers);

struct IntraOpThreadSetterRegisterer {
  IntraOpThreadSetterRegisterer(const char* name, IntraOpSetterScope scope,
                                IntraOpThreadSetter setter) {
    RegisterIntraOpThreadSetter(name, scope, std::move(setter));
  }
};

}  // namespace doppio
