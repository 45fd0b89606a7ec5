// Unary elementwise ops Y = f(X) (Neg, Exp, Log, Sqrt, Abs, Clip) and the
// same-shape gradient ops that pair a forward tensor with dY (AbsGradient,
// ClipGradient), written once as templates over a functor.
//
// A forward functor is constructed from its op (so it can read arguments)
// and provides
//   using Types = TypeList<...>;
//   template <typename T> T operator()(T x) const;
// and, when oneDNN computes the same function, EltwiseFn Dnnl() const
// (dnnl_eltwise.h), which large float32 tensors then run on.
// A gradient functor provides
//   using Types = TypeList<...>;
//   template <typename T> T operator()(T forward_value, T dy) const;  // dx
#pragma once

#include <type_traits>

#include "core/operator.h"
#include "operators/dnnl_eltwise.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

// -x, wrapping at the lowest integer as numpy does instead of overflowing.
template <typename T>
T WrappingNegate(T x) {
  if constexpr (std::is_integral<T>::value) {
    using Unsigned = std::make_unsigned_t<T>;
    return static_cast<T>(Unsigned(0) - static_cast<Unsigned>(x));
  } else {
    return -x;
  }
}

template <class Functor>
class UnaryElementwiseOp final : public Operator<CPUContext> {
 public:
  UnaryElementwiseOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), functor_(*this) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    DispatchTypes(typename Functor::Types{}, input_name(0), X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      Tensor* Y = Output(0);
      // In place, Y is X: the shape and storage stay.
      Y->Resize(X.dims());
      T* y = Y->mutable_data<T>();
      const int64_t count = X.numel();
      if (TryDnnlEltwise(functor_, count, x, y)) return;
      // Pointwise: any split over the intra-op threads gives the same bits.
      ParallelFor(count, [&](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) y[i] = functor_(x[i]);
      });
    });
  }

 private:
  Functor functor_;
};

// Inputs (forward tensor, dY) of one shape and type; output dX.
template <class Functor>
class UnaryGradientOp final : public Operator<CPUContext> {
 public:
  UnaryGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), functor_(*this) {}

  void RunOnDevice() override {
    const Tensor& forward = Input(0);
    const Tensor& dY = Input(1);
    DOPPIO_ENFORCE(forward.dims() == dY.dims(), "'", input_name(1), "' has shape ", dY.dims(),
                   " but '", input_name(0), "' has shape ", forward.dims());
    EnforceSameType(*this, 0, forward, 1, dY);
    DispatchTypes(typename Functor::Types{}, input_name(0), forward.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = forward.data<T>();
      const T* dy = dY.data<T>();
      Tensor* dX = Output(0);
      dX->Resize(dY.dims());
      T* dx = dX->mutable_data<T>();
      const int64_t count = dY.numel();
      ParallelFor(count, [&](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) dx[i] = functor_(v[i], dy[i]);
      });
    });
  }

 private:
  Functor functor_;
};

}  // namespace doppio
