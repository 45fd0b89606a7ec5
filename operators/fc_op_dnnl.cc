#include "operators/fc_op_dnnl.h"

#include <dnnl.hpp>

#include <unordered_map>
#include <vector>

#include "operators/dnnl_util.h"
#include "operators/thread_arena.h"

namespace doppio {

namespace {

using dnnl::memory;

// A dense row-major [rows, cols] matrix, or its transpose when `transposed`
// (stored [cols, rows]), as a [rows, cols] oneDNN operand.
memory::desc MatrixDesc(memory::dim rows, memory::dim cols, bool transposed) {
  const memory::dims strides = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  return memory::desc({rows, cols}, memory::data_type::f32, strides);
}

}  // namespace

struct DnnlMatMul::State {
  std::vector<int64_t> key;
  bool supported = false;
  bool with_bias = false;
  dnnl::stream stream{DnnlCpuEngine()};
  dnnl::matmul primitive;
  memory a, b, bias, c, scratchpad;
  size_t scratchpad_bytes = 0;
  // Rebuilt only when the shape changes; kept here so that running does not
  // allocate.
  std::unordered_map<int, memory> args;
};

DnnlMatMul::DnnlMatMul() : state_(std::make_unique<State>()) {}
DnnlMatMul::~DnnlMatMul() = default;

bool DnnlMatMul::Run(const DnnlMatMulShape& shape, const float* a, const float* b,
                     const float* bias, float* c) {
  State& s = *state_;
  const bool with_bias = bias != nullptr;
  const std::vector<int64_t> key{shape.M, shape.K,    shape.N,  shape.trans_a,
                                 shape.trans_b, shape.relu, with_bias};
  if (key != s.key) {
    s.key = key;
    s.supported = false;
    try {
      const memory::desc a_desc = MatrixDesc(shape.M, shape.K, shape.trans_a);
      const memory::desc b_desc = MatrixDesc(shape.K, shape.N, shape.trans_b);
      const memory::desc c_desc = MatrixDesc(shape.M, shape.N, false);
      const memory::desc bias_desc = MatrixDesc(1, shape.N, false);
      // Our scratchpad, from the running thread's arena (see dnnl_util.h).
      dnnl::primitive_attr attr = UserScratchpadAttr();
      if (shape.relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(ops);
      }
      const dnnl::matmul::desc desc = with_bias
                                          ? dnnl::matmul::desc(a_desc, b_desc, bias_desc, c_desc)
                                          : dnnl::matmul::desc(a_desc, b_desc, c_desc);
      const dnnl::matmul::primitive_desc pd(desc, attr, DnnlCpuEngine());
      s.primitive = dnnl::matmul(pd);
      s.a = memory(a_desc, DnnlCpuEngine(), nullptr);
      s.b = memory(b_desc, DnnlCpuEngine(), nullptr);
      s.bias = memory(bias_desc, DnnlCpuEngine(), nullptr);
      s.c = memory(c_desc, DnnlCpuEngine(), nullptr);
      s.scratchpad_bytes = pd.scratchpad_desc().get_size();
      s.scratchpad = memory(pd.scratchpad_desc(), DnnlCpuEngine(), nullptr);
      s.args = {{DNNL_ARG_SRC, s.a}, {DNNL_ARG_WEIGHTS, s.b}, {DNNL_ARG_DST, s.c}};
      if (with_bias) s.args[DNNL_ARG_BIAS] = s.bias;
      if (s.scratchpad_bytes > 0) s.args[DNNL_ARG_SCRATCHPAD] = s.scratchpad;
      s.supported = true;
    } catch (const dnnl::error&) {
      return false;
    }
  }
  if (!s.supported) return false;
  try {
    // The memory objects are handles: args holds the same objects, so
    // setting the data here is what the primitive sees.
    s.a.set_data_handle(const_cast<float*>(a));
    s.b.set_data_handle(const_cast<float*>(b));
    if (with_bias) s.bias.set_data_handle(const_cast<float*>(bias));
    s.c.set_data_handle(c);
    if (s.scratchpad_bytes > 0) {
      s.scratchpad.set_data_handle(ThreadArena::ForThisThread().Reserve(s.scratchpad_bytes));
    }
    s.primitive.execute(s.stream, s.args);
    s.stream.wait();
  } catch (const dnnl::error&) {
    s.supported = false;
    return false;
  }
  return true;
}

}  // namespace doppio
