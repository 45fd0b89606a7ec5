#include "operators/conv_op_dnnl.h"

#include <algorithm>
#include <cstring>
#include <dnnl.hpp>
#include <numeric>
#include <string>
#include <unordered_map>

#include "operators/conv_depthwise_gradient.h"
#include "operators/conv_winograd.h"
#include "operators/dnnl_operand.h"
#include "operators/dnnl_util.h"

namespace doppio {

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

memory::desc AnyLike(const memory::desc& desc) {
  return memory::desc(desc.dims(), memory::data_type::f32, memory::format_tag::any);
}

// Everything that decides the primitives; a change rebuilds them.
int64_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
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

dnnl::algorithm ChosenAlgorithm(const ConvProblem& p, ConvAlgorithm requested) {
  const bool winograd = requested == ConvAlgorithm::kWinograd ||
                        (requested == ConvAlgorithm::kAuto && WinogradPays(p));
  return winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
}

// make(algorithm), or make(direct) where oneDNN has no Winograd kernel for
// the case (AVX2, channels not a multiple of 16, an unsupported post-op).
template <typename Make>
auto WithDirectFallback(dnnl::algorithm algorithm, const Make& make) {
  if (algorithm == dnnl::algorithm::convolution_winograd) {
    try {
      return make(algorithm);
    } catch (const dnnl::error&) {
      // no Winograd kernel: direct below
    }
  }
  return make(dnnl::algorithm::convolution_direct);
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

// The descriptors of one problem in our layouts, plus its geometry in
// oneDNN's terms (dilation 1 is oneDNN's 0).
struct ConvDescs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  // X and Y (and their gradients) go to oneDNN in our layout, not in one it
  // picks (see ReadsNhwcAsIs).
  bool as_is = false;

  explicit ConvDescs(const ConvProblem& p) {
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

  memory::desc Activation(const memory::desc& ours) const { return as_is ? ours : AnyLike(ours); }

  // A post-op or sum (ConvFusion) makes it an inference primitive, as
  // for_inference (training_mode 0) does.
  dnnl::convolution_forward::primitive_desc ForwardHint(bool with_bias, const EltwiseFn& post_op,
                                                        bool with_sum, bool for_inference,
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
};

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

// make() with descs->as_is where ReadsNhwcAsIs says so, kept when jit(its
// result) says oneDNN runs JIT kernels on our layout; otherwise, or when
// oneDNN has nothing for our layout, make() with the layouts oneDNN picks.
// descs->as_is tells which was kept.
template <typename Make, typename Jit>
auto PreferringNhwcAsIs(const ConvProblem& p, dnnl::algorithm algorithm, ConvDescs* descs,
                        const Make& make, const Jit& jit) {
  descs->as_is = ReadsNhwcAsIs(p, algorithm);
  if (descs->as_is) {
    try {
      auto result = make();
      if (jit(result)) return result;
    } catch (const dnnl::error&) {
      // nothing for our layout: oneDNN's pick below
    }
    descs->as_is = false;
  }
  return make();
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

namespace {

// The data-gradient primitive. oneDNN's blocked kernels pad the input
// channels to 16, so for first layers (1 to 3 channel images, NCHW, one
// group) most of their work is padding; there its GEMM kernel on our own
// layout is 1.5-4.5x faster, and dX needs no reorder. Should that layout get
// only the reference implementation, the blocked one is used after all.
dnnl::convolution_backward_data::primitive_desc DataGradientPrimitive(
    const ConvProblem& p, const ConvDescs& descs, dnnl::algorithm algorithm,
    const dnnl::convolution_forward::primitive_desc& hint) {
  const auto make = [&](const memory::desc& diff_src) {
    const dnnl::convolution_backward_data::desc desc(algorithm, diff_src, AnyLike(descs.weights),
                                                     descs.Activation(descs.dst), descs.strides,
                                                     descs.dilates, descs.pad_l, descs.pad_r);
    return dnnl::convolution_backward_data::primitive_desc(desc, UserScratchpadAttr(),
                                                           DnnlCpuEngine(), hint);
  };
  const bool few_input_channels =
      p.geometry.order == StorageOrder::kNCHW && p.group == 1 && p.in_per_group < 4;
  if (few_input_channels) {
    try {
      auto plain = make(descs.src);
      if (std::string(plain.impl_info_str()).compare(0, 3, "ref") != 0) return plain;
    } catch (const dnnl::error&) {
      // No implementation for our layout: take the blocked one below.
    }
  }
  return make(descs.Activation(descs.src));
}

}  // namespace

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

namespace {

// oneDNN has direct depthwise weight-gradient kernels for blocked layouts
// only for some shapes; for others (MobileNetV2's 960-channel 2x2 stage at
// batch 64) it falls back to a per-group GEMM that took 16 ms for 4.4
// MFLOP, a quarter of the training step. There our loop computes it.
bool UseOwnDepthwiseWeightGradient(const ConvProblem& p,
                                   const dnnl::convolution_backward_weights::primitive_desc& pd) {
  const ConvPoolGeometry& g = p.geometry;
  const bool depthwise = p.group > 1 && p.in_per_group == 1 && p.out_per_group == 1;
  return depthwise && g.order == StorageOrder::kNCHW && g.num_spatial() == 2 &&
         std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// The filter- and data-gradient primitives of one problem, of one algorithm.
struct BackwardDescs {
  dnnl::convolution_backward_weights::primitive_desc weights;
  dnnl::convolution_backward_data::primitive_desc data;  // empty without dX
};

BackwardDescs BackwardPrimitives(const ConvProblem& p, const ConvDescs& descs, bool with_bias,
                                 bool with_dx, dnnl::algorithm algorithm) {
  const auto hint = descs.ForwardHint(with_bias, {}, false, false, algorithm);
  const dnnl::convolution_backward_weights::desc weights_desc(
      algorithm, descs.Activation(descs.src), AnyLike(descs.weights),
      with_bias ? descs.bias : memory::desc(), descs.Activation(descs.dst), descs.strides,
      descs.dilates, descs.pad_l, descs.pad_r);
  BackwardDescs result;
  result.weights = dnnl::convolution_backward_weights::primitive_desc(
      weights_desc, UserScratchpadAttr(), DnnlCpuEngine(), hint);
  if (with_dx) result.data = DataGradientPrimitive(p, descs, algorithm, hint);
  return result;
}

}  // namespace

struct DnnlConvBackward::State {
  std::vector<int64_t> key;
  bool supported = false;
  dnnl::stream stream{DnnlCpuEngine()};
  Scratchpad scratchpad;
  dnnl::convolution_backward_weights weights_primitive;
  Operand w_src, w_diff_dst, w_diff_weights;
  memory diff_bias;
  bool has_bias = false;
  dnnl::convolution_backward_data data_primitive;
  Operand d_diff_dst, d_weights, d_diff_src;
  bool has_dx = false;
  bool share_diff_dst = false;
  bool own_depthwise_weights = false;  // dW (and dbias) by DepthwiseWeightGradient
  size_t arena_bytes = 0;

  void Build(const ConvProblem& p, bool with_bias, bool with_dx, dnnl::algorithm algorithm);
};

// Builds the primitives of one algorithm; throws dnnl::error where oneDNN
// has none.
void DnnlConvBackward::State::Build(const ConvProblem& p, bool with_bias, bool with_dx,
                                    dnnl::algorithm algorithm) {
  ConvDescs descs(p);
  const BackwardDescs pds = PreferringNhwcAsIs(
      p, algorithm, &descs,
      [&] { return BackwardPrimitives(p, descs, with_bias, with_dx, algorithm); },
      [&](const BackwardDescs& built) {
        return JitKernel(built.weights.impl_info_str()) &&
               (!with_dx || JitKernel(built.data.impl_info_str()));
      });
  const auto& weights_pd = pds.weights;
  weights_primitive = dnnl::convolution_backward_weights(weights_pd);
  own_depthwise_weights = UseOwnDepthwiseWeightGradient(p, weights_pd);
  scratchpad.Reset();
  scratchpad.Need(weights_pd.scratchpad_desc());
  w_src.Init(descs.src, weights_pd.src_desc(), true, &scratchpad);
  w_diff_dst.Init(descs.dst, weights_pd.diff_dst_desc(), true, &scratchpad);
  w_diff_weights.Init(descs.weights, weights_pd.diff_weights_desc(), false, &scratchpad);
  has_bias = with_bias;
  if (has_bias) diff_bias = memory(descs.bias, DnnlCpuEngine(), nullptr);
  has_dx = with_dx;
  share_diff_dst = false;
  if (has_dx) {
    const auto& data_pd = pds.data;
    data_primitive = dnnl::convolution_backward_data(data_pd);
    scratchpad.Need(data_pd.scratchpad_desc());
    d_diff_dst.Init(descs.dst, data_pd.diff_dst_desc(), true, &scratchpad);
    // Both primitives usually want dY in one layout: convert it once.
    share_diff_dst = w_diff_dst.reordered && d_diff_dst.reordered &&
                     data_pd.diff_dst_desc() == weights_pd.diff_dst_desc() &&
                     !own_depthwise_weights;
    d_weights.Init(descs.weights, data_pd.weights_desc(), true, &scratchpad);
    d_diff_src.Init(descs.src, data_pd.diff_src_desc(), false, &scratchpad);
  }
  // The dW primitive's buffers are done with when the dX one starts;
  // only a shared dY lives on into it.
  ArenaLayout layout;
  scratchpad.Place(&layout);
  if (share_diff_dst) w_diff_dst.Place(&layout);
  const size_t data_phase = layout.Mark();
  if (!share_diff_dst) w_diff_dst.Place(&layout);
  w_src.Place(&layout);
  w_diff_weights.Place(&layout);
  layout.Rewind(data_phase);
  if (has_dx) {
    if (!share_diff_dst) d_diff_dst.Place(&layout);
    d_weights.Place(&layout);
    d_diff_src.Place(&layout);
  }
  arena_bytes = layout.total();
}

DnnlConvBackward::DnnlConvBackward() : state_(std::make_unique<State>()) {}
DnnlConvBackward::~DnnlConvBackward() = default;

bool DnnlConvBackward::Run(const ConvProblem& p, const float* x, const float* w, const float* dy,
                           float* dw, float* dbias, float* dx, ConvAlgorithm algorithm) {
  State& s = *state_;
  const std::vector<int64_t> key =
      ProblemKey(p, {dbias != nullptr, dx != nullptr, static_cast<int64_t>(algorithm)});
  if (key != s.key) {
    s.key = key;
    s.supported = false;
    try {
      WithDirectFallback(ChosenAlgorithm(p, algorithm), [&](dnnl::algorithm a) {
        s.Build(p, dbias != nullptr, dx != nullptr, a);
        return true;
      });
      s.supported = true;
    } catch (const dnnl::error&) {
      return false;
    }
  }
  if (!s.supported) return false;
  try {
    char* block = ArenaBlock(s.arena_bytes);
    s.scratchpad.Bind(block);
    if (s.own_depthwise_weights) {
      DepthwiseWeightGradient(p, x, dy, dw, dbias);
    } else {
      for (Operand* operand : {&s.w_src, &s.w_diff_dst, &s.w_diff_weights}) operand->Bind(block);
      s.w_src.In(s.stream, x);
      s.w_diff_dst.In(s.stream, dy);
      s.w_diff_weights.SetOut(dw);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, s.w_src.inner},
                                           {DNNL_ARG_DIFF_DST, s.w_diff_dst.inner},
                                           {DNNL_ARG_DIFF_WEIGHTS, s.w_diff_weights.inner}};
      if (s.has_bias) {
        s.diff_bias.set_data_handle(dbias);
        args[DNNL_ARG_DIFF_BIAS] = s.diff_bias;
      }
      s.scratchpad.AddTo(&args);
      s.weights_primitive.execute(s.stream, args);
      s.w_diff_weights.Out(s.stream);
    }
    if (s.has_dx) {
      // Bound only now: their bytes were the dW primitive's.
      if (!s.share_diff_dst) s.d_diff_dst.Bind(block);
      s.d_weights.Bind(block);
      s.d_diff_src.Bind(block);
      if (!s.share_diff_dst) s.d_diff_dst.In(s.stream, dy);
      s.d_weights.In(s.stream, w);
      s.d_diff_src.SetOut(dx);
      const memory& diff_dst = s.share_diff_dst ? s.w_diff_dst.inner : s.d_diff_dst.inner;
      s.data_primitive.execute(
          s.stream, s.scratchpad.With({{DNNL_ARG_DIFF_DST, diff_dst},
                                       {DNNL_ARG_WEIGHTS, s.d_weights.inner},
                                       {DNNL_ARG_DIFF_SRC, s.d_diff_src.inner}}));
      s.d_diff_src.Out(s.stream);
    }
    s.stream.wait();
  } catch (const dnnl::error&) {
    s.supported = false;
    return false;
  }
  return true;
}

}  // namespace doppio
