#include "operators/fp16_momentum_sgd_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// Outputs may alias inputs: each element is read before it is written.
template <typename T>
void WeightDecayMomentumStep(int64_t n, const T* grad, const T* moment, float lr, float momentum,
                             float weight_decay, bool nesterov, T* new_grad, T* new_moment,
                             T* param) {
  for (int64_t i = 0; i < n; ++i) {
    const float p = Widened(param[i]);
    const float g = std::fma(weight_decay, p, Widened(grad[i]));
    const float mu_m = momentum * Widened(moment[i]);
    const float m_new = std::fma(lr, g, mu_m);
    const float step = nesterov ? std::fma(m_new, momentum, m_new) - mu_m : m_new;
    new_moment[i] = Narrowed<T>(m_new);
    new_grad[i] = Narrowed<T>(step);
    param[i] = Narrowed<T>(p - step);
  }
}

// The op body both types share: checks, out-of-place param copy, the loop.
template <typename TypeListT>
void RunWeightDecayMomentum(Operator<CPUContext>* op, const Tensor& grad, const Tensor& moment,
                            const Tensor& param, float lr, float momentum, float weight_decay,
                            bool nesterov, Tensor* new_grad, Tensor* new_moment,
                            Tensor* new_param) {
  EnforceSameSizeAndType(*op, 0, grad, 1, moment);
  EnforceSameSizeAndType(*op, 0, grad, 3, param);
  DispatchTypes(TypeListT{}, op->input_name(0), grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!op->IsInputOutputAlias(3, 2)) new_param->CopyFrom(param);
    new_grad->Resize(grad.dims());
    new_moment->Resize(moment.dims());
    const T* g = grad.data<T>();
    const T* m = moment.data<T>();
    T* out_g = new_grad->mutable_data<T>();
    T* out_m = new_moment->mutable_data<T>();
    T* p = new_param->mutable_data<T>();
    ParallelFor(grad.numel(), [&](int64_t begin, int64_t end) {
      WeightDecayMomentumStep<T>(end - begin, g + begin, m + begin, lr, momentum, weight_decay,
                                 nesterov, out_g + begin, out_m + begin, p + begin);
    });
  });
}

}  // namespace

FP16MomentumSGDUpdateOp::FP16MomentumSGDUpdateOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      momentum_(GetSingleArgument<float>("momentum", 0.0f)),
      weight_decay_(GetSingleArgument<float>("weight_decay", 0.0f)),
      nesterov_(GetSingleArgument<int64_t>("nesterov", 0) != 0) {}

void FP16MomentumSGDUpdateOp::RunOnDevice() {
  const float lr = static_cast<float>(ReadLearningRate(*this, 2, Input(2)));
  RunWeightDecayMomentum<TypeList<float16, bfloat16>>(this, Input(0), Input(1), Input(3), lr,
                                                      momentum_, weight_decay_, nesterov_,
                                                      Output(0), Output(1), Output(2));
}

FP32MomentumSGDUpdateOp::FP32MomentumSGDUpdateOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      momentum_(GetSingleArgument<float>("momentum", 0.0f)),
      weight_decay_(GetSingleArgument<float>("weight_decay", 0.0f)),
      nesterov_(GetSingleArgument<int64_t>("nesterov", 0) != 0) {}

void FP32MomentumSGDUpdateOp::RunOnDevice() {
  const float lr = static_cast<float>(ReadLearningRate(*this, 2, Input(2)));
  RunWeightDecayMomentum<TypeList<float>>(this, Input(0), Input(1), Input(3), lr, momentum_,
                                          weight_decay_, nesterov_, Output(0), Output(1),
                                          Output(2));
}

REGISTER_CPU_OPERATOR(FP16MomentumSGDUpdate, FP16MomentumSGDUpdateOp);
REGISTER_CPU_OPERATOR(FP32MomentumSGDUpdate, FP32MomentumSGDUpdateOp);

namespace {

void WeightDecayMomentumSchema(OpSchema& schema) {
  schema.Elementwise()
      .NumInputs(4)
      .NumOutputs(3)
      .AllowInplace({{0, 0}, {1, 1}, {3, 2}})
      .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
        return std::vector<TensorShape>{in[0], in[1], in[3]};
      })
      .Arg("momentum", "(float, default 0) the momentum mu")
      .Arg("nesterov", "(bool, default 0) Nesterov's accelerated gradient")
      .Arg("weight_decay", "(float, default 0) L2 decay added to the gradient: g + wd * param")
      .Input(1, "moment", "momentum history, grad's size and type")
      .Input(2, "lr", "learning rate, one float32 element (positive: the step is subtracted)")
      .Output(0, "output_grad", "the step")
      .Output(1, "output_moment", "the new momentum")
      .Output(2, "output_param", "param - step");
}

}  // namespace

OPERATOR_SCHEMA(FP16MomentumSGDUpdate)
    .Apply(WeightDecayMomentumSchema)
    .Arg("fp32_update",
         "(bool, default 0) Caffe2's GPU switch to float32 arithmetic; the CPU kernel always "
         "computes in float32 and rounds each result once")
    .Input(0, "grad", "gradient, float16 or bfloat16")
    .Input(3, "param", "parameter, grad's size and type")
    .Doc("Momentum SGD with weight decay on float16 (or bfloat16) blobs, computed in float32: "
         "g' = g + wd*param; m' = lr*g' + mu*m, param -= m' (nesterov: m' = mu*m + lr*g', "
         "param -= (1+mu)*m' - mu*m). Returns (step, m', param).");

OPERATOR_SCHEMA(FP32MomentumSGDUpdate)
    .Apply(WeightDecayMomentumSchema)
    .Input(0, "grad", "gradient, float32")
    .Input(3, "param", "parameter, grad's size and type")
    .Doc("FP16MomentumSGDUpdate's update on float32 blobs (Caffe2's choice for the params "
         "float16 training keeps in float32, such as SpatialBN's scale and bias).");

SHOULD_NOT_DO_GRADIENT(FP16MomentumSGDUpdate, "it is a parameter update, not part of the model");
SHOULD_NOT_DO_GRADIENT(FP32MomentumSGDUpdate, "it is a parameter update, not part of the model");

}  // namespace doppio
