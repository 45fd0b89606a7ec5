// What conv_op_dnnl.cc (forward) and conv_op_dnnl_backward.cc (gradients)
// share: the problem's oneDNN descriptors, the algorithm choice and the
// rules for taking our layouts as they are. Internal to those two files.
#pragma once

#include <dnnl.hpp>
#include <initializer_list>
#include <vector>

#include "operators/conv_op.h"
#include "operators/dnnl_eltwise.h"

namespace doppio {
namespace dnnl_conv {

using dnnl::memory;

// `desc`'s dims with the layout left to oneDNN.
memory::desc AnyLike(const memory::desc& desc);
// Everything that decides the primitives; a change rebuilds them.
std::vector<int64_t> ProblemKey(const ConvProblem& p, std::initializer_list<int64_t> extra);
// Winograd where it pays (or is asked for), else direct.
dnnl::algorithm ChosenAlgorithm(const ConvProblem& p, ConvAlgorithm requested);
// Whether oneDNN takes our NHWC tensors as they are (conv_op_dnnl.cc says why).
bool ReadsNhwcAsIs(const ConvProblem& p, dnnl::algorithm algorithm);
// Whether a primitive's implementation is a JIT kernel (not ref or gemm).
bool JitKernel(const char* impl);

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

// The descriptors of one problem in our layouts, plus its geometry in
// oneDNN's terms (dilation 1 is oneDNN's 0).
struct ConvDescs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  // X and Y (and their gradients) go to oneDNN in our layout, not in one it
  // picks (see ReadsNhwcAsIs).
  bool as_is = false;

  explicit ConvDescs(const ConvProblem& p);

  memory::desc Activation(const memory::desc& ours) const { return as_is ? ours : AnyLike(ours); }

  // A post-op or sum (ConvFusion) makes it an inference primitive, as
  // for_inference (training_mode 0) does.
  dnnl::convolution_forward::primitive_desc ForwardHint(bool with_bias, const EltwiseFn& post_op,
                                                        bool with_sum, bool for_inference,
                                                        dnnl::algorithm algorithm) const;
};

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

}  // namespace dnnl_conv
}  // namespace doppio
