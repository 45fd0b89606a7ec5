#include "operators/clip_tensor_op.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"

namespace doppio {

ClipTensorByScalingOp::ClipTensorByScalingOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      threshold_(GetSingleArgument<float>("threshold", 0.0f)) {
  DOPPIO_ENFORCE(threshold_ > 0, "argument threshold must be > 0, got ", threshold_);
}

void ClipTensorByScalingOp::RunOnDevice() {
  const Tensor& input = Input(0);
  DOPPIO_ENFORCE(input.numel() > 0, "'", input_name(0), "' is empty; there is nothing to clip");
  const double value = ReadScalar(*this, 1, Input(1), "the value (norm)");
  // Caffe2 multiplies its member threshold in place, so the threshold
  // compounds over runs; here each run starts from the argument.
  double threshold = threshold_;
  if (InputSize() > 2) {
    threshold *= ReadScalar(*this, 2, Input(2), "the additional threshold");
  }
  DispatchTypes(FloatTypes{}, input_name(0), input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (value <= threshold) {
      if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(input);
      return;
    }
    const T ratio = static_cast<T>(threshold / value);
    const T* x = input.data<T>();
    Tensor* clipped = Output(0);
    clipped->Resize(input.dims());
    T* y = clipped->mutable_data<T>();
    for (int64_t i = 0; i < input.numel(); ++i) y[i] = ratio * x[i];
  });
}

REGISTER_CPU_OPERATOR(ClipTensorByScaling, ClipTensorByScalingOp);

OPERATOR_SCHEMA(ClipTensorByScaling)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("threshold", "(float, required > 0) scale the tensor down when val exceeds it", true)
    .Input(0, "input_tensor", "float32 or float64 tensor to clip, not empty")
    .Input(1, "val", "one float: the value (usually the tensor's norm) compared with the "
                     "threshold")
    .Input(2, "additional_threshold", "(optional) one float multiplying the threshold")
    .Output(0, "clipped", "input_tensor * threshold / val if val > threshold, else a copy")
    .Doc("Clips a tensor by scaling: if val > threshold (* additional_threshold), the "
         "tensor is multiplied by threshold / val. Used for gradient-norm clipping.");

SHOULD_NOT_DO_GRADIENT(ClipTensorByScaling, "it clips gradients during the parameter update");

}  // namespace doppio
