#include "operators/fc_op_dnnl.h"

#include <dnnl.hpp>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "operators/dnnl_util.h"
#include "operators/thread_arena.h"

namespace doppio {

namespace {

using dnnl::memory;

memory::desc Strided(memory::dim rows, memory::dim cols, memory::dim row_stride,
                     memory::dim col_stride) {
  return memory::desc({rows, cols}, memory::data_type::f32, {row_stride, col_stride});
}

}  // namespace

struct DnnlMatMul::State {
  std::vector<int64_t> key;
  bool supported = false;
  dnnl::stream stream{DnnlCpuEngine()};
  dnnl::matmul primitive;
  memory src, weights, bias, dst, scratchpad;
  size_t scratchpad_bytes = 0;
};

DnnlMatMul::DnnlMatMul() : state_(std::make_unique<State>()) {}
DnnlMatMul::~DnnlMatMul() = default;

bool DnnlMatMul::Run(int64_t M, int64_t K, int64_t N, bool weight_is_k_by_n, const float* x,
                     const float* w, const float* bias, float* y, bool relu) {
  State& s = *state_;
  const std::vector<int64_t> key{M, K, N, weight_is_k_by_n, relu};
  if (key != s.key) {
    s.key = key;
    s.supported = false;
    try {
      const memory::desc src = Strided(M, K, K, 1);
      // The weights as the [K, N] operand, read in place from W's layout.
      const memory::desc weights = weight_is_k_by_n ? Strided(K, N, N, 1) : Strided(K, N, 1, K);
      const memory::desc bias_desc = Strided(1, N, N, 1);
      const memory::desc dst = Strided(M, N, N, 1);
      // Our scratchpad, from the running thread's arena (see dnnl_util.h).
      dnnl::primitive_attr attr = UserScratchpadAttr();
      if (relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(ops);
      }
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, bias_desc, dst),
                                            attr, DnnlCpuEngine());
      s.primitive = dnnl::matmul(pd);
      s.src = memory(src, DnnlCpuEngine(), nullptr);
      s.weights = memory(weights, DnnlCpuEngine(), nullptr);
      s.bias = memory(bias_desc, DnnlCpuEngine(), nullptr);
      s.dst = memory(dst, DnnlCpuEngine(), nullptr);
      s.scratchpad_bytes = pd.scratchpad_desc().get_size();
      s.scratchpad = memory(pd.scratchpad_desc(), DnnlCpuEngine(), nullptr);
      s.supported = true;
    } catch (const dnnl::error&) {
      return false;
    }
  }
  if (!s.supported) return false;
  try {
    s.src.set_data_handle(const_cast<float*>(x));
    s.weights.set_data_handle(const_cast<float*>(w));
    s.bias.set_data_handle(const_cast<float*>(bias));
    s.dst.set_data_handle(y);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.src},
                                         {DNNL_ARG_WEIGHTS, s.weights},
                                         {DNNL_ARG_BIAS, s.bias},
                                         {DNNL_ARG_DST, s.dst}};
    if (s.scratchpad_bytes > 0) {
      s.scratchpad.set_data_handle(ThreadArena::ForThisThread().Reserve(s.scratchpad_bytes));
      args[DNNL_ARG_SCRATCHPAD] = s.scratchpad;
    }
    s.primitive.execute(s.stream, args);
    s.stream.wait();
  } catch (const dnnl::error&) {
    s.supported = false;
    return false;
  }
  return true;
}

}  // namespace doppio
