// DnnlConvBackward: ConvGradient's oneDNN primitives (conv_op_dnnl.h);
// the forward and what both share are in conv_op_dnnl.cc and
// conv_op_dnnl_internal.h.
#include <algorithm>
#include <cstring>
#include <dnnl.hpp>
#include <string>

#include "operators/conv_depthwise_gradient.h"
#include "operators/conv_op_dnnl.h"
#include "operators/conv_op_dnnl_internal.h"
#include "operators/dnnl_operand.h"
#include "operators/dnnl_util.h"

namespace doppio {

using namespace dnnl_conv;  // the helpers shared with conv_op_dnnl.cc

namespace {

using dnnl_operand::ArenaBlock;
using dnnl_operand::ArenaLayout;
using dnnl_operand::Operand;
using dnnl_operand::Scratchpad;

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
