// Elementwise activations and their gradients: Relu, LeakyRelu, Sigmoid,
// Tanh, Elu, Softplus, and Swish, whose gradient reads (X, Y, dY) (PRelu, which has a parameter, is
// in prelu_op.h).
//
// Each activation is a functor (in activation_ops.cc) plugged into two
// shared kernels:
//   UnaryActivationOp<F>:    Y = F(X), float32 or float64, X -> Y in place;
//   ActivationGradientOp<F>: dX from the forward *output* Y and dY, as
//                            Caffe2's <Op>Gradient ops take (Y, dY), so the
//                            forward may run in place and X need not be kept.
// A functor reads its arguments in its constructor and provides
//   template <typename T> void Forward(int64_t n, const T* x, T* y) const;
//   template <typename T> void Backward(int64_t n, const T* y, const T* dy,
//                                       T* dx) const;
// A functor oneDNN can compute also provides `EltwiseFn Dnnl() const`
// (dnnl_eltwise.h): large float32 forwards then run on oneDNN's kernels.
// Both loops work element by element, so they are safe when y aliases x or
// dx aliases dy.
//
// The helpers in namespace activation serve every float-only op whose
// output follows its input elementwise or whose gradient reads (Y, dY):
// Softmax, Dropout, the losses.
#pragma once

#include <cstdint>
#include <string>

#include "core/gradient.h"
#include "core/operator.h"
#include "operators/dnnl_eltwise.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

class OpSchema;

namespace activation {

// The parts every forward activation schema shares: Y = f(X), one input,
// one output, X's shape and type, in place allowed.
void ForwardSchema(OpSchema& schema);
// The parts every <Op>Gradient(Y, dY) -> dX schema shares (in place over dY).
void GradientSchema(OpSchema& schema);
// Why an activation's gradient op has no gradient of its own.
extern const char kSecondOrder[];

// For an op whose output `out` takes the shape of its input 0, `in`:
// resizes `out` and calls fn(in_data, out_data, count) with the float type
// of `in`. `out` may alias `in` (its storage is kept).
template <typename Fn>
void DispatchFloatLikeInput(const OperatorBase& op, const Tensor& in, Tensor* out, Fn&& fn) {
  DispatchInput(FloatTypes{}, op, 0, in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in_data = in.data<T>();
    const int64_t count = in.numel();
    out->Resize(in.dims());
    fn(in_data, out->template mutable_data<T>(), count);
  });
}

// Y = f(X) elementwise for the ops whose gradient reads X (Swish, Gelu,
// HardSwish) and so do not fit UnaryActivationOp below: large float32
// tensors on oneDNN's kernel when `op` has one (TryDnnlEltwise), the rest
// split over the intra-op threads. `f` maps a T to a T; Y may be X.
template <typename Op, typename F>
void PointwiseForward(const Op& op, const Tensor& X, Tensor* Y, F f) {
  DispatchFloatLikeInput(op, X, Y, [&](auto x, auto y, int64_t n) {
    if (TryDnnlEltwise(op, n, x, y)) return;
    ParallelFor(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
    });
  });
}

// Throws unless dY (input 1) has the shape and type of the forward output Y
// (input 0), as every <Op>Gradient(Y, dY) op needs.
void CheckGradientMatchesOutput(const OperatorBase& op, const Tensor& Y, const Tensor& dY);

}  // namespace activation

// <Op>Gradient(Y, dY) -> dX, passing the forward op's arguments along: the
// maker of every op whose gradient reads its output rather than its input.
class GetGradientFromOutput final : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type() + "Gradient", "", {O(0), GO(0)}, {GI(0)},
                             Def().arg());
  }
};

template <typename Functor>
class UnaryActivationOp final : public Operator<CPUContext> {
 public:
  UnaryActivationOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), functor_(*this) {}

  void RunOnDevice() override {
    activation::DispatchFloatLikeInput(
        *this, Input(0), Output(0), [&](auto x, auto y, int64_t n) {
          if (TryDnnlEltwise(functor_, n, x, y)) return;
          // Every functor here is pointwise: any split gives the same bits.
          ParallelFor(n, [&](int64_t begin, int64_t end) {
            functor_.Forward(end - begin, x + begin, y + begin);
          });
        });
  }

 private:
  Functor functor_;
};

template <typename Functor>
class ActivationGradientOp final : public Operator<CPUContext> {
 public:
  ActivationGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), functor_(*this) {}

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    activation::CheckGradientMatchesOutput(*this, Y, dY);
    DispatchInput(FloatTypes{}, *this, 0, Y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* y = Y.data<T>();
      const T* dy = dY.data<T>();
      const int64_t n = Y.numel();
      Tensor* dX = Output(0);
      dX->Resize(Y.dims());
      T* dx = dX->template mutable_data<T>();
      ParallelFor(n, [&](int64_t begin, int64_t end) {
        functor_.Backward(end - begin, y + begin, dy + begin, dx + begin);
      });
    });
  }

 private:
  Functor functor_;
};

}  // namespace doppio
