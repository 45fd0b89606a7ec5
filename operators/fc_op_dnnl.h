// The oneDNN backend of FC and FCGradient for float32: one matrix product
// C [M, N] = op(A) [M, K] * op(B) [K, N] (+ bias [N]) (then Relu) on
// oneDNN's matmul, the operands read in place through strides, so a
// transposed operand costs no copy.
//
// Why oneDNN and not OpenBLAS for the FC family: at the MLP's shapes (M = 64
// rows, K = 784 or 256) oneDNN's AVX-512 brgemm kernels run about twice the
// FLOP rate of OpenBLAS's sgemm here (tools/bench/README.md, "FC on
// oneDNN"), and oneDNN runs on the OpenMP pool the Conv kernels already use;
// OpenBLAS's own pool, next to it, left two sets of threads spinning for the
// same cores.
//
// Each DnnlMatMul caches its primitive for the last shape it ran, and takes
// its scratchpad from the running thread's ThreadArena (see dnnl_util.h), so
// a steady-state run allocates nothing. Not thread-safe: one per op and
// product, as an op runs on one thread at a time.
#pragma once

#include <cstdint>
#include <memory>

namespace doppio {

struct DnnlMatMulShape {
  int64_t M = 0;
  int64_t K = 0;
  int64_t N = 0;
  // A is stored [K, M] (read transposed) instead of [M, K]; likewise B
  // stored [N, K] instead of [K, N]. Both row-major and dense.
  bool trans_a = false;
  bool trans_b = false;
  bool relu = false;
};

class DnnlMatMul {
 public:
  DnnlMatMul();
  ~DnnlMatMul();
  // c = op(a) op(b) (+ bias when not null) (then max(c, 0) with shape.relu).
  // False when oneDNN refuses the case or fails (the caller falls back to
  // its own kernel); c may then have been partly written.
  bool Run(const DnnlMatMulShape& shape, const float* a, const float* b, const float* bias,
           float* c);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace doppio
