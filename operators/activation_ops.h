// Elementwise activations and their gradients: Relu, LeakyRelu, Sigmoid,
// Tanh, Elu, Softplus (PRelu, which has a parameter, is in prelu_op.h).
//
// Each activation is a functor plugged into two shared kernels:
//   UnaryActivationOp<F>:    Y = F(X), float32 or float64, X -> Y in place;
//   ActivationGradientOp<F>: dX from the forward *output* Y and dY, as
//                            Caffe2's <Op>Gradient ops take (Y, dY), so the
//                            forward may run in place and X need not be kept.
// A functor reads its arguments in its constructor and provides
//   template <typename T> void Forward(int64_t n, const T* x, T* y) const;
//   template <typename T> void Backward(int64_t n, const T* y, const T* dy,
//                                       T* dx) const;
// Both loops work element by element, so they are safe when y aliases x or
// dx aliases dy.
#pragma once

#include <cstdint>
#include <string>

#include "core/operator.h"

namespace doppio {
namespace activation {

// Calls fn(TypeTag<T>) for float32 and float64; any other dtype is an error
// naming the op and the blob that holds it.
template <typename Fn>
void DispatchFloat(const OperatorBase& op, const std::string& blob, DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    default: break;
  }
  DOPPIO_THROW("op ", op.type(), ": '", blob, "' holds ", DataTypeName(dtype), "; ",
               op.type(), " supports float32 and float64");
}

}  // namespace activation

template <typename Functor>
class UnaryActivationOp final : public Operator<CPUContext> {
 public:
  UnaryActivationOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), functor_(*this) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    activation::DispatchFloat(*this, input_name(0), X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      const int64_t n = X.numel();
      Tensor* Y = Output(0);
      Y->Resize(X.dims());
      functor_.Forward(n, x, Y->template mutable_data<T>());
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
    DOPPIO_ENFORCE(Y.dims() == dY.dims(), "op ", type(), ": gradient '", input_name(1),
                   "' has shape ", dY.dims(), " but the forward output '", input_name(0),
                   "' has shape ", Y.dims());
    DOPPIO_ENFORCE(Y.dtype() == dY.dtype(), "op ", type(), ": '", input_name(0), "' holds ",
                   DataTypeName(Y.dtype()), " but '", input_name(1), "' holds ",
                   DataTypeName(dY.dtype()));
    activation::DispatchFloat(*this, input_name(0), Y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* y = Y.data<T>();
      const T* dy = dY.data<T>();
      const int64_t n = Y.numel();
      Tensor* dX = Output(0);
      dX->Resize(Y.dims());
      functor_.Backward(n, y, dy, dX->template mutable_data<T>());
    });
  }

 private:
  Functor functor_;
};

// ---- the functors ----

// max(x, 0); the gradient passes where y > 0.
struct ReluFunctor {
  explicit ReluFunctor(const OperatorBase&) {}
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const;
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const;
};

// x for x > 0, alpha * x otherwise (argument alpha, default 0.01).
struct LeakyReluFunctor {
  explicit LeakyReluFunctor(const OperatorBase& op);
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const;
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const;
  float alpha;
};

// 1 / (1 + exp(-x)); dx = dy * y * (1 - y).
struct SigmoidFunctor {
  explicit SigmoidFunctor(const OperatorBase&) {}
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const;
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const;
};

// tanh(x); dx = dy * (1 - y^2).
struct TanhFunctor {
  explicit TanhFunctor(const OperatorBase&) {}
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const;
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const;
};

// x for x >= 0, alpha * (exp(x) - 1) otherwise (argument alpha, default 1).
struct EluFunctor {
  explicit EluFunctor(const OperatorBase& op);
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const;
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const;
  float alpha;
};

// log(1 + exp(x)); dx = dy * (1 - exp(-y)).
struct SoftplusFunctor {
  explicit SoftplusFunctor(const OperatorBase&) {}
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const;
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const;
};

}  // namespace doppio
