#include "operators/conv_op_dnnl.h"

#include <algorithm>
#include <cstring>
#include <dnnl.hpp>
#include <numeric>
#include <string>
#include <unordered_map>

#include "operators/conv_op_dnnl_internal.h"
#include "operators/conv_winograd.h"
#include "operators/dnnl_operand.h"
#include "operators/dnnl_util.h"

namespace doppio {

using namespace dnnl_conv;  // the helpers shared with conv_op_dnnl_backward.cc

namespace {

using dnnl::memory;
using dnnl_operand::ArenaBlock;
using dnnl_operand::ArenaLayout;
using dnnl_operand::Operand;
using dnnl_operand::Scratchpad;

memory::dims ToDims(const std::vector<int64_t>& values) {
  return memory::dims(values.begin(), values.end());
}

// Strides of X or Y ([N, C, spatial...] logically) as our tensors lay them out.
memory::dims ActivationStrides(StorageOrder order, int64_t channels,
                               const std::vector<int64_t>& spatial) {
  const int nd = static_cast<int>(spatial.size());
  const int64_t image = std::accumulate(spatial.begin(), spatial.end(), int64_t{1},
                                        std::multiplies<int64_t>());
  memory::dims strides(2 + nd);
  strides[0] = channels * image;
  const bool nchw = order == StorageOrder::kNCHW;
  strides[1] = nchw ? image : 1;
  int64_t step = nchw ? 1 : channels;
  for (int d = nd - 1; d >= 0; --d) {
    strides[2 + d] = step;
    step *= spatial[d];
  }
  return strides;
}

memory::desc ActivationDesc(StorageOrder order, int64_t batch, int64_t channels,
                            const std::vector<int64_t>& spatial) {
  memory::dims dims{batch, channels};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  return memory::desc(dims, memory::data_type::f32,
                      ActivationStrides(order, channels, spatial));
}

// The filter [M, Cg, k...] (NHWC: [M, k..., Cg]) as oneDNN's (g,) o, i, k...
memory::desc WeightsDesc(const ConvProblem& p) {
  const std::vector<int64_t>& kernel = p.geometry.kernel;
  const int nd = static_cast<int>(kernel.size());
  const bool nchw = p.geometry.order == StorageOrder::kNCHW;
  const int64_t kernel_size = p.geometry.kernel_size();
  const int64_t Cg = p.in_per_group, Mg = p.out_per_group;
  memory::dims dims, strides;
  if (p.group > 1) {
    dims.push_back(p.group);
    strides.push_back(Mg * Cg * kernel_size);
  }
  dims.push_back(Mg);
  strides.push_back(Cg * kernel_size);
  dims.push_back(Cg);
  strides.push_back(nchw ? kernel_size : 1);
  memory::dims kernel_strides(nd);
  int64_t step = nchw ? 1 : Cg;
  for (int d = nd - 1; d >= 0; --d) {
    kernel_strides[d] = step;
    step *= kernel[d];
  }
  dims.insert(dims.end(), kernel.begin(), kernel.end());
  strides.insert(strides.end(), kernel_strides.begin(), kernel_strides.end());
  return memory::desc(dims, memory::data_type::f32, strides);
}

// Everything that decides the primitives; a change rebuilds them.
int64_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Winograd F(4x4, 3x3) computes a 3x3 convolution with about a quarter of
// direct's multiplications, in 6x6 input tiles; oneDNN has it for AVX-512
// only. Against oneDNN's direct kernels on a 2-core AVX-512 machine (batch 1,
// 8 and 64; forward, data and filter gradients) it was 1.2-3.6x faster from
// 32 channels with outputs of 8x8 or more and from 64 channels with 4x4 or
// more (the gradients of 128-512 channels at 4x4: data 0.8-1.2x, filter
// 1.9-2.6x); slower at 2x2, where a tile is mostly padding, and with 16
// channels, too few for its tile products. oneDNN's own convolution_auto
// takes it for those 16-channel layers and never for inference, where it
// gained most. Batch plays no part, so every device count takes the same
// algorithm.
bool WinogradPays(const ConvProblem& p) {
  const ConvPoolGeometry& g = p.geometry;
  if (g.num_spatial() != 2 || p.group != 1) return false;
  for (int d = 0; d < 2; ++d) {
    if (g.kernel[d] != 3 || g.stride[d] != 1 || g.dilation[d] != 1) return false;
  }
  const int64_t channels = std::min(g.channels, p.out_channels);
  const int64_t side = std::min(g.output[0], g.output[1]);
  return (channels >= 32 && side >= 8) || (channels >= 64 && side >= 4);
}

// Where oneDNN has no Winograd kernel (AVX2; channels not a multiple of 16),
// our own (operators/conv_winograd.h) runs Winograd convolutions of a
// constant (inference) filter. Against oneDNN's direct AVX2 kernels (in
// ResNet-18 at batch 1, each filter cold as in a net) it was 1.5-2.3x faster
// from 32 channels with outputs of 8x8 or more, but 0.8x at 7x7 with 512
// channels: its filter, 4x the direct one, streams from memory for only 4
// tiles an image. So auto takes it where WinogradPays and outputs are 8x8
// or more. Training keeps oneDNN's direct kernels: ours has no gradients.
bool OwnWinogradCandidate(const ConvProblem& p, bool constant_filter, ConvAlgorithm requested) {
  if (!constant_filter || !WinogradF43Handles(p)) return false;
  if (requested == ConvAlgorithm::kWinograd) return true;
  const std::vector<int64_t>& out = p.geometry.output;
  return requested == ConvAlgorithm::kAuto && WinogradPays(p) &&
         *std::min_element(out.begin(), out.end()) >= 8;
}

dnnl::convolution_forward::primitive_desc ForwardPrimitive(const ConvProblem& p, ConvDescs* descs,
                                                           bool with_bias, const EltwiseFn& post_op,
                                                           bool with_sum, bool inference,
                                                           dnnl::algorithm algorithm) {
  return PreferringNhwcAsIs(
      p, algorithm, descs,
      [&] { return descs->ForwardHint(with_bias, post_op, with_sum, inference, algorithm); },
      [](const auto& pd) { return JitKernel(pd.impl_info_str()); });
}

}  // namespace

namespace dnnl_conv {

memory::desc AnyLike(const memory::desc& desc) {
  return memory::desc(desc.dims(), memory::data_type::f32, memory::format_tag::any);
}

std::vector<int64_t> ProblemKey(const ConvProblem& p, std::initializer_list<int64_t> extra) {
  const ConvPoolGeometry& g = p.geometry;
  std::vector<int64_t> key{static_cast<int64_t>(g.order), g.batch, g.channels, p.out_channels,
                           p.group, g.num_spatial()};
  for (const auto* values : {&g.input, &g.kernel, &g.stride, &g.dilation, &g.pads})
    key.insert(key.end(), values->begin(), values->end());
  key.insert(key.end(), extra.begin(), extra.end());
  return key;
}

dnnl::algorithm ChosenAlgorithm(const ConvProblem& p, ConvAlgorithm requested) {
  const bool winograd = requested == ConvAlgorithm::kWinograd ||
                        (requested == ConvAlgorithm::kAuto && WinogradPays(p));
  return winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
}

// NHWC tensors: oneDNN's direct kernels read and write NHWC as fast as its
// blocked layouts (measured per shape with AVX2 and AVX-512; training:
// forward and both gradients, inference: forward), yet asked to pick a
// layout they often take the blocks, so every X, Y, dY and dX was
// reordered (a quarter of a ResNet-20 step; on AVX2 inference the reorders
// cost 0.4-2.5x the convolution itself in MobileNetV2's and ResNet-50's
// layers at batch 8). So the primitives take our tensors as they are,
// unless oneDNN has only a reference or GEMM kernel for that, or for dense
// convolutions of outputs under 4x4, where the blocked kernels were
// faster. Winograd reads its own blocks.
bool ReadsNhwcAsIs(const ConvProblem& p, dnnl::algorithm algorithm) {
  const ConvPoolGeometry& g = p.geometry;
  const int64_t side = *std::min_element(g.output.begin(), g.output.end());
  const bool small_dense = side < 4 && p.group == 1 && g.kernel_size() > 1;
  return g.order == StorageOrder::kNHWC && algorithm == dnnl::algorithm::convolution_direct &&
         !small_dense;
}

bool JitKernel(const char* impl) {
  const std::string name(impl);
  return name.compare(0, 3, "ref") != 0 && name.find("gemm") == std::string::npos;
}

ConvDescs::ConvDescs(const ConvProblem& p) {
  const ConvPoolGeometry& g = p.geometry;
  const int nd = g.num_spatial();
  src = ActivationDesc(g.order, g.batch, g.channels, g.input);
  dst = ActivationDesc(g.order, g.batch, p.out_channels, g.output);
  weights = WeightsDesc(p);
  bias = memory::desc({p.out_channels}, memory::data_type::f32, memory::format_tag::x);
  strides = ToDims(g.stride);
  for (int64_t d : g.dilation) dilates.push_back(d - 1);
  pad_l.assign(g.pads.begin(), g.pads.begin() + nd);
  pad_r.assign(g.pads.begin() + nd, g.pads.end());
}

// A post-op or sum (ConvFusion) makes it an inference primitive, as
// for_inference (training_mode 0) does.
dnnl::convolution_forward::primitive_desc ConvDescs::ForwardHint(
    bool with_bias, const EltwiseFn& post_op, bool with_sum, bool for_inference,
    dnnl::algorithm algorithm) const {
  const bool inference = !post_op.empty() || with_sum || for_inference;
  const dnnl::convolution_forward::desc desc(
      inference ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training,
      algorithm, Activation(src), AnyLike(weights), with_bias ? bias : memory::desc(),
      Activation(dst), strides, dilates, pad_l, pad_r);
  dnnl::primitive_attr attr = UserScratchpadAttr();
  dnnl::post_ops post_ops;
  if (with_sum) post_ops.append_sum(1.0f);
  AppendDnnlPostOp(post_op, &post_ops);
  if (inference) attr.set_post_ops(post_ops);
  return dnnl::convolution_forward::primitive_desc(desc, attr, DnnlCpuEngine());
}

}  // namespace dnnl_conv

ActivationLayout DnnlConvSourceLayout(const ConvProblem& p, const EltwiseFn& post_op, bool with_sum,
                                      bool inference, ConvAlgorithm algorithm) {
  dnnl::algorithm built = dnnl::algorithm::convolution_direct;
  const memory::desc chosen =
      WithDirectFallback(ChosenAlgorithm(p, algorithm), [&](dnnl::algorithm a) {
        ConvDescs descs(p);
        auto pd = ForwardPrimitive(p, &descs, true, post_op, with_sum, inference, a);
        built = a;
        return pd;
      }).src_desc();
  ConvProblem nhwc = p;
  nhwc.geometry.order = StorageOrder::kNHWC;
  const bool constant_filter = inference || with_sum || !post_op.empty();
  if (built != dnnl::algorithm::convolution_winograd &&
      OwnWinogradCandidate(nhwc, constant_filter, algorithm)) {
    return ActivationLayout::kNhwc;  // our Winograd reads NHWC as it is
  }
  const ConvPoolGeometry& g = p.geometry;
  for (StorageOrder order : {StorageOrder::kNCHW, StorageOrder::kNHWC}) {
    if (chosen == ActivationDesc(order, g.batch, g.channels, g.input)) {
      return order == StorageOrder::kNCHW ? ActivationLayout::kNchw : ActivationLayout::kNhwc;
    }
  }
  // oneDNN reorders X into its blocks; as NHWC, the same convolution may
  // read X as it is.
  if (g.order == StorageOrder::kNCHW && ReadsNhwcAsIs(nhwc, built)) {
    ConvDescs descs(nhwc);
    ForwardPrimitive(nhwc, &descs, true, post_op, with_sum, inference, built);
    if (descs.as_is) return ActivationLayout::kNhwc;
  }
  return ActivationLayout::kOther;
}


struct DnnlConvForward::State {
  std::vector<int64_t> key;
  bool supported = false;
  dnnl::stream stream{DnnlCpuEngine()};
  dnnl::convolution_forward primitive;
  Scratchpad scratchpad;
  Operand src, weights, dst;
  Operand sum;  // the summand of ConvFusion's sum fusions, into dst's layout
  bool has_sum = false;
  memory bias;
  bool has_bias = false;
  size_t arena_bytes = 0;
  // constant_filter: the reordered filter lives here, not in the arena, and
  // `reordered_filter` is the filter it was made from (null: none yet).
  bool cache_filter = false;
  Tensor filter_cache;
  const float* reordered_filter = nullptr;
  // Set where our own Winograd runs the case instead (see OwnWinogradCandidate).
  std::unique_ptr<WinogradF43Conv> own_winograd;

  // Picks and builds what runs p; throws dnnl::error where nothing can.
  void Choose(const ConvProblem& p, bool with_bias, const DnnlConvForwardOptions& options);
  void Build(const ConvProblem& p, bool with_bias, const DnnlConvForwardOptions& options,
             dnnl::algorithm algorithm);
};

void DnnlConvForward::State::Choose(const ConvProblem& p, bool with_bias,
                                    const DnnlConvForwardOptions& options) {
  own_winograd.reset();
  const dnnl::algorithm chosen = ChosenAlgorithm(p, options.algorithm);
  if (OwnWinogradCandidate(p, options.constant_filter, options.algorithm)) {
    try {  // oneDNN's Winograd where it has one
      Build(p, with_bias, options, dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error&) {
      own_winograd = std::make_unique<WinogradF43Conv>();
    }
    return;
  }
  WithDirectFallback(chosen, [&](dnnl::algorithm a) {
    Build(p, with_bias, options, a);
    return true;
  });
}

// Builds the primitives of one algorithm; throws dnnl::error where oneDNN
// has none (a Winograd filter reorder from an NHWC filter, for one).
void DnnlConvForward::State::Build(const ConvProblem& p, bool with_bias,
                                   const DnnlConvForwardOptions& options,
                                   dnnl::algorithm algorithm) {
  ConvDescs descs(p);
  const auto pd = ForwardPrimitive(p, &descs, with_bias, options.post_op, options.sum != nullptr,
                                   options.inference, algorithm);
  primitive = dnnl::convolution_forward(pd);
  scratchpad.Reset();
  scratchpad.Need(pd.scratchpad_desc());
  src.Init(descs.src, pd.src_desc(), true, &scratchpad);
  weights.Init(descs.weights, pd.weights_desc(), true, &scratchpad);
  dst.Init(descs.dst, pd.dst_desc(), false, &scratchpad);
  // The sum post-op accumulates into dst: the summand goes in first.
  has_sum = options.sum != nullptr;
  if (has_sum) sum.Init(descs.dst, pd.dst_desc(), true, &scratchpad);
  has_bias = with_bias;
  if (has_bias) bias = memory(descs.bias, DnnlCpuEngine(), nullptr);
  cache_filter = options.constant_filter && weights.reordered;
  ArenaLayout layout;
  scratchpad.Place(&layout);
  src.Place(&layout);
  dst.Place(&layout);
  if (cache_filter) {
    const int64_t bytes = static_cast<int64_t>(weights.inner.get_desc().get_size());
    filter_cache.Resize({bytes});
    // Zeroed once: blocked layouts pad the channels, and the padding
    // must read as zeros.
    uint8_t* cache = filter_cache.mutable_data<uint8_t>();
    std::fill(cache, cache + bytes, uint8_t{0});
    weights.inner.set_data_handle(cache);
  }
  weights.Place(&layout, /*inner_in_arena=*/!cache_filter);
  arena_bytes = layout.total();
}

DnnlConvForward::DnnlConvForward() : state_(std::make_unique<State>()) {}
DnnlConvForward::~DnnlConvForward() = default;

bool DnnlConvForward::Run(const ConvProblem& p, const float* x, const float* w,
                          const float* bias, float* y, const DnnlConvForwardOptions& options) {
  State& s = *state_;
  const std::vector<int64_t> key =
      ProblemKey(p, {bias != nullptr, static_cast<int64_t>(options.post_op.algorithm),
                     FloatBits(options.post_op.alpha), FloatBits(options.post_op.beta),
                     options.constant_filter, options.sum != nullptr, options.inference,
                     static_cast<int64_t>(options.algorithm)});
  if (key != s.key) {
    s.key = key;
    s.supported = false;
    s.reordered_filter = nullptr;
    try {
      s.Choose(p, bias != nullptr, options);
      s.supported = true;
    } catch (const dnnl::error&) {
      return false;  // oneDNN has no implementation for this case
    }
  }
  if (!s.supported) return false;
  if (s.own_winograd != nullptr) {
    s.own_winograd->Run(p, x, w, bias, options.sum, options.post_op, y);
    return true;
  }
  try {
    char* block = ArenaBlock(s.arena_bytes);
    s.scratchpad.Bind(block);
    s.src.Bind(block);
    s.dst.Bind(block);
    s.src.In(s.stream, x);
    s.weights.Bind(block);
    if (!s.cache_filter) {
      s.weights.In(s.stream, w);
    } else if (s.reordered_filter != w) {
      s.weights.In(s.stream, w);
      s.reordered_filter = w;
    }
    s.dst.SetOut(y);
    if (s.has_sum && s.sum.reordered) {
      s.sum.InTo(s.stream, options.sum, s.dst.inner);
    } else if (s.has_sum && options.sum != y) {
      std::memcpy(y, options.sum, s.dst.user.get_desc().get_size());
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.src.inner},
                                         {DNNL_ARG_WEIGHTS, s.weights.inner},
                                         {DNNL_ARG_DST, s.dst.inner}};
    if (s.has_bias) {
      s.bias.set_data_handle(const_cast<float*>(bias));
      args[DNNL_ARG_BIAS] = s.bias;
    }
    s.scratchpad.AddTo(&args);
    s.primitive.execute(s.stream, args);
    s.dst.Out(s.stream);
    s.stream.wait();
  } catch (const dnnl::error&) {
    s.supported = false;
    return false;
  }
  return true;
}

}  // namespace doppio
