// The oneDNN backend of inference FCs (fusion_type 1, or engine "DNNL"):
// Y = X W^T + b (W stored [N, K]; [K, N] for FCTransposed), with the Relu
// as a post-op, on oneDNN's matmul. It runs on the OpenMP pool the Conv
// kernels already use; OpenBLAS's own pool, next to it, left two sets of
// threads spinning for 2 cores (see tools/bench/README.md, inference_bench).
//
// Like DnnlConvForward it caches its primitive for the last shape, and
// takes its scratchpad from the running thread's ThreadArena. The plain FC
// (training) never comes here: its numerics stay OpenBLAS's.
#pragma once

#include <cstdint>
#include <memory>

namespace doppio {

class DnnlMatMul {
 public:
  DnnlMatMul();
  ~DnnlMatMul();
  // y [M, N] = x [M, K] * W^T + bias, then max(y, 0) with relu. False when
  // oneDNN refuses the case (the caller falls back to its own kernel).
  bool Run(int64_t M, int64_t K, int64_t N, bool weight_is_k_by_n, const float* x,
           const float* w, const float* bias, float* y, bool relu);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace doppio
