#include "operators/int8_roi_align_op.h"

#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

Argument NhwcOrder() {
  Argument order;
  order.set_name("order");
  order.set_s("NHWC");
  return order;
}

}  // namespace

Int8RoIAlignOp::Int8RoIAlignOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      y_(int8::OutputQuantization(*this)),
      twin_("RoIAlign", def, 2, 1, {NhwcOrder()}) {
  const std::string order = GetSingleArgument<std::string>("order", "NHWC");
  DOPPIO_ENFORCE(order == "NHWC", "Int8RoIAlign takes NHWC tensors (as Caffe2's), not ", order);
}

void Int8RoIAlignOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  Tensor* xf = twin_.input(0);
  xf->Resize(X.t.dims());
  int8::Dequantize(X.t.data<uint8_t>(), X.t.numel(), int8::QuantizationOf(X),
                   xf->mutable_data<float>());
  twin_.input(1)->ShareData(Input(1));
  twin_.Run();
  const Tensor& out = twin_.output();
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, out.dims());
  const float* v = out.data<float>();
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  ParallelFor(out.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = int8::QuantizeReal(v[i], y_);
  });
}

REGISTER_CPU_OPERATOR(Int8RoIAlign, Int8RoIAlignOp);

OPERATOR_SCHEMA(Int8RoIAlign)
    .NumInputs(2)
    .NumOutputs(1)
    .Arg("spatial_scale", "(float, default 1) maps RoI coordinates onto X")
    .Arg("pooled_h", "(int, default 1) output height")
    .Arg("pooled_w", "(int, default 1) output width")
    .Arg("sampling_ratio", "(int, default -1) samples per bin side; <= 0 adaptive")
    .Arg("aligned", "(bool, default false) half-pixel shifted RoIs")
    .Arg("order", "(string, default NHWC) must be NHWC")
    .Apply(int8::OutputQuantizationArgs)
    .Input(0, "X", "Int8 [N, H, W, C] (uint8) feature map")
    .Input(1, "RoIs", "float32 [R, 5] (batch index, x1, y1, x2, y2) or [R, 4]")
    .Output(0, "Y", "Int8 [R, pooled_h, pooled_w, C] (uint8)")
    .Doc("Quantized RoIAlign (as RoIAlign, on X's reals, rounded once).");

SHOULD_NOT_DO_GRADIENT(Int8RoIAlign, int8::kInferenceOnly);

}  // namespace doppio
