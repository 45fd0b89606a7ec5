// Allreduce over per-device CPU blobs in one process: after the op, every
// blob holds the elementwise sum of all of them (synchronous SGD's gradient
// sum across cpu_0/, cpu_1/, ... replicas).
//
// The buffers are split into contiguous ranges, one per thread; each thread
// sums its range across all blobs and writes the sum back to every blob (a
// reduce-scatter and an all-gather fused per range), so each element is read
// n times and written n times and every core does a share of the traffic.
// Blocks of a range are summed in a small accumulator that stays in L1.
//
// Every element is summed in input order 0..n-1 whatever the thread count,
// so results are bit-identical across runs and `num_threads` settings.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/operator.h"
#include "core/thread_pool.h"

namespace doppio {

class AllreduceOp final : public Operator<CPUContext> {
 public:
  AllreduceOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Threads worth using for `numel` elements: tiny tensors are summed on the
  // calling thread, where waking workers would cost more than the sum.
  int ThreadsFor(int64_t numel) const;
  // Runs task(t) for t in [0, threads): t = 0 on the calling thread, the
  // rest on the op's pool (made on first need and kept between runs).
  void RunOnThreads(int threads, const std::function<void(int)>& task);

  int num_threads_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace doppio
