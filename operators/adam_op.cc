#include "operators/adam_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_functors.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"

namespace doppio {

AdamOp::AdamOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadAdamArgs(*this)) {}

void AdamOp::RunOnDevice() {
  const Tensor& param = Input(0);
  const Tensor& moment_1 = Input(1);
  const Tensor& moment_2 = Input(2);
  const Tensor& grad = Input(3);
  EnforceSameSizeAndType(*this, 0, param, 1, moment_1);
  EnforceSameSizeAndType(*this, 0, param, 2, moment_2);
  EnforceSameSizeAndType(*this, 0, param, 3, grad);
  const double lr = ReadLearningRate(*this, 4, Input(4));
  const int64_t iteration = ReadIteration(*this, 5, Input(5));
  const double beta1 = args_.beta1, beta2 = args_.beta2, epsilon = args_.epsilon;
  const double correction = args_.Correction(iteration);

  DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = param.data<T>();
    const T* m1 = moment_1.data<T>();
    const T* m2 = moment_2.data<T>();
    const T* g = grad.data<T>();
    Tensor* outputs[3] = {Output(0), Output(1), Output(2)};
    outputs[0]->Resize(param.dims());
    outputs[1]->Resize(moment_1.dims());
    outputs[2]->Resize(moment_2.dims());
    T* new_w = outputs[0]->mutable_data<T>();
    T* new_m1 = outputs[1]->mutable_data<T>();
    T* new_m2 = outputs[2]->mutable_data<T>();
    T* step_out = nullptr;
    if (OutputSize() > 3) {
      Tensor* step = Output(3);
      step->Resize(grad.dims());
      step_out = step->mutable_data<T>();
    }
    // The step the CUDA kernel takes (elementwise_functors.h).
    const functors::AdamStep adam{beta1, beta2, epsilon, correction};
    for (int64_t i = 0; i < param.numel(); ++i) {
      double m, v;
      const double step = adam(g[i], m1[i], m2[i], &m, &v);
      new_w[i] = static_cast<T>(w[i] + lr * step);
      new_m1[i] = static_cast<T>(m);
      new_m2[i] = static_cast<T>(v);
      if (step_out != nullptr) step_out[i] = static_cast<T>(step);
    }
  });
}

REGISTER_CPU_OPERATOR(Adam, AdamOp);

OPERATOR_SCHEMA(Adam)
    .NumInputs(6)
    .NumOutputs(3, 4)
    .AllowInplace({{0, 0}, {1, 1}, {2, 2}})
    .Arg("beta1", "(float, default 0.9) decay of the first moment")
    .Arg("beta2", "(float, default 0.999) decay of the second moment")
    .Arg("epsilon", "(float, default 1e-5) added to sqrt of the second moment")
    .Input(0, "param", "parameters, float32 or float64")
    .Input(1, "moment_1", "first moment history, param's size and type")
    .Input(2, "moment_2", "second moment history, param's size and type")
    .Input(3, "grad", "gradient, param's size and type")
    .Input(4, "lr", "learning rate, one element (negative for descent)")
    .Input(5, "iter", "int64 iteration count, one element")
    .Output(0, "output_param", "param + lr * step")
    .Output(1, "output_moment_1", "updated first moment")
    .Output(2, "output_moment_2", "updated second moment")
    .Output(3, "output_grad", "(optional) the effective gradient `step`")
    .Doc("Adam update. With t = iter + 1: m1 = beta1*m1 + (1-beta1)*g, m2 = beta2*m2 + "
         "(1-beta2)*g^2, step = sqrt(1-beta2^t)/(1-beta1^t) * m1/(sqrt(m2)+epsilon), "
         "param += lr*step.");

SHOULD_NOT_DO_GRADIENT(Adam, "it is a parameter update, not part of the model");

}  // namespace doppio
