#include "operators/int8_conv_dnnl.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/enforce.h"
#include "operators/dnnl_util.h"

namespace doppio {
namespace {

using dnnl::memory;

memory::dims Dims(std::initializer_list<int64_t> values) { return memory::dims(values); }

}  // namespace

bool DnnlInt8ConvIsExact() {
  static const bool exact = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 ||
           isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return exact;
}

bool DnnlInt8Conv::PrepareFilter(const int8::Int8TensorCPU& W) {
  if (W.t.raw_data() == filter_data_ && W.t.dims() == filter_dims_ &&
      W.zero_point == filter_zero_point_) {
    return filter_fits_;
  }
  filter_data_ = W.t.raw_data();
  filter_dims_ = W.t.dims();
  filter_zero_point_ = W.zero_point;
  filter_reordered_ = false;
  const int64_t n = W.t.numel();
  const int64_t M = W.t.dim(0);
  const int64_t per_channel = M > 0 ? n / M : 0;
  const uint8_t* w = W.t.data<uint8_t>();
  filter_s8_.resize(n);
  filter_sums_.assign(M, 0);
  filter_fits_ = true;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = w[i] - W.zero_point;
    if (v < -128 || v > 127) {
      filter_fits_ = false;
      return false;
    }
    filter_s8_[i] = static_cast<int8_t>(v);
    filter_sums_[i / per_channel] += v;
  }
  return true;
}

void DnnlInt8Conv::PreparePrimitive(const ConvPoolGeometry& g, int64_t group, int64_t M,
                                    float multiplier, int32_t zero_point, bool relu) {
  const int64_t N = g.batch, C = g.channels;
  const int64_t H = g.input[0] + g.pad_begin(0) + g.pad_end(0);
  const int64_t Wd = g.input[1] + g.pad_begin(1) + g.pad_end(1);
  const std::vector<double> key = {double(N),
                                   double(H),
                                   double(Wd),
                                   double(C),
                                   double(M),
                                   double(group),
                                   double(g.kernel[0]),
                                   double(g.kernel[1]),
                                   double(g.stride[0]),
                                   double(g.stride[1]),
                                   double(g.dilation[0]),
                                   double(g.dilation[1]),
                                   multiplier,
                                   double(zero_point),
                                   double(relu)};
  if (key == key_ && filter_reordered_) return;
  dnnl::engine& engine = DnnlCpuEngine();
  src_desc_ = memory::desc(Dims({N, C, H, Wd}), memory::data_type::u8, memory::format_tag::nhwc);
  dst_desc_ = memory::desc(Dims({N, M, g.output[0], g.output[1]}), memory::data_type::u8,
                           memory::format_tag::nhwc);
  bias_desc_ = memory::desc(Dims({M}), memory::data_type::s32, memory::format_tag::x);
  const bool grouped = group > 1;
  const memory::dims weight_dims =
      grouped ? Dims({group, M / group, C / group, g.kernel[0], g.kernel[1]})
              : Dims({M, C, g.kernel[0], g.kernel[1]});
  const memory::desc any_weights(weight_dims, memory::data_type::s8, memory::format_tag::any);
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_desc_,
      any_weights, bias_desc_, dst_desc_, Dims({g.stride[0], g.stride[1]}),
      Dims({g.dilation[0] - 1, g.dilation[1] - 1}), Dims({0, 0}), Dims({0, 0}));
  // dst = round(multiplier * (acc + bias)), Relu'd, plus the zero point.
  dnnl::primitive_attr attr = UserScratchpadAttr();
  attr.set_output_scales(0, {multiplier});
  attr.set_zero_points(DNNL_ARG_DST, 0, {zero_point});
  if (relu) {
    dnnl::post_ops post_ops;
    post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(post_ops);
  }
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  primitive_ = dnnl::convolution_forward(pd);
  scratchpad_desc_ = pd.scratchpad_desc();
  scratchpad_.resize(scratchpad_desc_.get_size());
  // The filter, [M, kH, kW, C / group] as Caffe2 stores it, into oneDNN's layout.
  memory user_weights(memory::desc(weight_dims, memory::data_type::s8,
                                   grouped ? memory::format_tag::gohwi : memory::format_tag::ohwi),
                      engine, filter_s8_.data());
  weights_ = memory(pd.weights_desc(), engine);
  dnnl::stream stream(engine);
  dnnl::reorder(user_weights, weights_).execute(stream, user_weights, weights_);
  stream.wait();
  key_ = key;
  filter_reordered_ = true;
}

const uint8_t* DnnlInt8Conv::PaddedInput(const ConvPoolGeometry& g, const int8::Int8TensorCPU& X) {
  const uint8_t* x = X.t.data<uint8_t>();
  const int64_t pt = g.pad_begin(0), pb = g.pad_end(0), pl = g.pad_begin(1), pr = g.pad_end(1);
  if (pt == 0 && pb == 0 && pl == 0 && pr == 0) return x;
  const int64_t C = g.channels, H = g.input[0], W = g.input[1];
  const int64_t Hp = H + pt + pb, Wp = W + pl + pr;
  padded_.assign(g.batch * Hp * Wp * C, static_cast<uint8_t>(X.zero_point));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t y = 0; y < H; ++y) {
      std::memcpy(padded_.data() + ((n * Hp + y + pt) * Wp + pl) * C, x + (n * H + y) * W * C,
                  W * C);
    }
  }
  return padded_.data();
}

bool DnnlInt8Conv::Run(const ConvPoolGeometry& g, int64_t group, const int8::Int8TensorCPU& X,
                       const int8::Int8TensorCPU& W, const int32_t* bias,
                       const int8::Quantization& yq, bool relu, uint8_t* y) {
  if (rejected_ || !DnnlInt8ConvIsExact() || g.num_spatial() != 2 || !PrepareFilter(W)) {
    return false;
  }
  const int64_t M = W.t.dim(0);
  bias_.resize(M);
  for (int64_t m = 0; m < M; ++m) {
    const int64_t b = (bias != nullptr ? bias[m] : 0) - int64_t{X.zero_point} * filter_sums_[m];
    if (b < INT32_MIN || b > INT32_MAX) return false;
    bias_[m] = static_cast<int32_t>(b);
  }
  const float multiplier = static_cast<float>(static_cast<double>(X.scale) * W.scale / yq.scale);
  try {
    PreparePrimitive(g, group, M, multiplier, yq.zero_point, relu);
  } catch (const dnnl::error&) {
    // An epilogue this oneDNN has no int8 kernel for: the float32 path runs
    // this op from now on (asking again each run would throw each run).
    rejected_ = true;
    return false;
  }
  const uint8_t* src = PaddedInput(g, X);
  dnnl::engine& engine = DnnlCpuEngine();
  const memory src_memory(src_desc_, engine, const_cast<uint8_t*>(src));
  const memory bias_memory(bias_desc_, engine, bias_.data());
  const memory dst_memory(dst_desc_, engine, y);
  const memory scratchpad(scratchpad_desc_, engine, scratchpad_.data());
  dnnl::stream stream(engine);
  primitive_.execute(stream, {{DNNL_ARG_SRC, src_memory},
                              {DNNL_ARG_WEIGHTS, weights_},
                              {DNNL_ARG_BIAS, bias_memory},
                              {DNNL_ARG_DST, dst_memory},
                              {DNNL_ARG_SCRATCHPAD, scratchpad}});
  stream.wait();
  return true;
}

}  // namespace doppio
