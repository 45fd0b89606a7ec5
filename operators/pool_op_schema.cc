// The pooling ops' schemas and gradients (their kernels: pool_op.cc).
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/schema.h"
#include "operators/op_cost.h"
#include "operators/pool_op.h"

namespace doppio {

namespace {

void PoolArgs(OpSchema& schema) {
  schema
      .Arg("kernel",
           "(int) window size on every spatial axis; or kernels (one per "
           "axis), or kernel_h and kernel_w")
      .Arg("stride", "(int, default 1) step on every axis; or strides, or stride_h/stride_w")
      .Arg("pad",
           "(int, default 0) padding on both sides of every axis; or pads (begins, "
           "then ends), or pad_t/pad_l/pad_b/pad_r; each must be below the kernel")
      .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
      .Arg("legacy_pad", "(int, default 0) 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING")
      .Arg("dilation",
           "(int, default 1) spacing of a window's taps on every axis; or "
           "dilations, or dilation_h/dilation_w (the CUDA op runs dilated "
           "windows on the CPU kernel)")
      .Arg("global_pooling", "(bool, default 0) pool over the whole spatial extent");
}

// `what` is "the maximum" or "the average"; `dims` names the rank restriction.
std::function<void(OpSchema&)> ForwardSchema(const std::string& what, const std::string& dims) {
  return [what, dims](OpSchema& schema) {
    schema.NumInputs(1)
        .NumOutputs(1)
        .TensorInferenceFunction(ConvPoolShapeInference(/*channels_from_filter=*/false))
        .CostInferenceFunction(CostInferenceForPool)
        .Apply(PoolArgs)
        .Input(0, "X",
               "input " + dims +
                   ", NCHW or NHWC (float32 or float64; MaxPool: "
                   "any numeric type)")
        .Output(0, "Y", "pooled output: " + what + " of each window")
        .Doc("Takes " + what + " over sliding windows of the spatial dims of X " + dims + ".");
  };
}

// MaxPool's optional second output.
void IndicesOutput(OpSchema& schema) {
  const auto shapes = ConvPoolShapeInference(/*channels_from_filter=*/false);
  schema.NumOutputs(1, 2)
      .TensorInferenceFunction(
          [shapes](const OperatorDef& def, const std::vector<TensorShape>& in) {
            std::vector<TensorShape> out = shapes(def, in);
            if (def.output_size() > 1 && !out.empty()) {
              out.push_back(out[0]);
              out.back().set_data_type(TensorProto::INT64);
            }
            return out;
          })
      .Output(1, "Indices",
              "(optional, int64, NCHW) for each maximum, the flat index into X of the first "
              "input equal to it: its position within the (n, c) plane, row-major, or "
              "column-major with storage_order 1, plus n * C + c times the plane's size (as "
              "ONNX Runtime's MaxPool); -1 for a window without a number. Not differentiable")
      .Arg("storage_order",
           "(int, default 0) Indices within a plane row-major (0) or "
           "column-major (1)");
}

void AverageArgs(OpSchema& schema) {
  schema.Arg("count_include_pad",
             "(bool, default 0) 1: divide by the whole kernel size, "
             "padding included; 0: by the input elements in the window");
}

void GradientSchema(OpSchema& schema) {
  schema.NumInputs(3)
      .CostInferenceFunction(CostInferenceForPoolGradient)
      .NumOutputs(1)
      .IdenticalTypeAndShape()
      .Apply(PoolArgs)
      .Input(0, "X", "the pooling op's input")
      .Input(1, "Y", "the pooling op's output")
      .Input(2, "dY", "gradient of Y")
      .Output(0, "dX", "gradient of X")
      .Doc("Gradient of a pooling op; takes the forward op's arguments.");
}

const char kAnyRank[] = "with 1 to 3 spatial dims";

}  // namespace

OPERATOR_SCHEMA(AveragePool).LowPrecisionInFloat32().Apply(ForwardSchema("the average", kAnyRank)).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool1D)
    .Apply(ForwardSchema("the average", "with 1 spatial dim"))
    .Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool2D)
    .Apply(ForwardSchema("the average", "with 2 spatial dims"))
    .Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool3D)
    .Apply(ForwardSchema("the average", "with 3 spatial dims"))
    .Apply(AverageArgs);
OPERATOR_SCHEMA(MaxPool).LowPrecisionInFloat32().Apply(ForwardSchema("the maximum", kAnyRank)).Apply(IndicesOutput);
OPERATOR_SCHEMA(MaxPool1D)
    .Apply(ForwardSchema("the maximum", "with 1 spatial dim"))
    .Apply(IndicesOutput);
OPERATOR_SCHEMA(MaxPool2D)
    .Apply(ForwardSchema("the maximum", "with 2 spatial dims"))
    .Apply(IndicesOutput);
OPERATOR_SCHEMA(MaxPool3D)
    .Apply(ForwardSchema("the maximum", "with 3 spatial dims"))
    .Apply(IndicesOutput);
OPERATOR_SCHEMA(AveragePoolGradient).LowPrecisionInFloat32().Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool1DGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool2DGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(AveragePool3DGradient).Apply(GradientSchema).Apply(AverageArgs);
OPERATOR_SCHEMA(MaxPoolGradient).LowPrecisionInFloat32().Apply(GradientSchema);
OPERATOR_SCHEMA(MaxPool1DGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(MaxPool2DGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(MaxPool3DGradient).Apply(GradientSchema);
OPERATOR_SCHEMA(LpPool)
    .Apply(ForwardSchema("the p-norm (sum |x|^p)^(1/p)", kAnyRank))
    .Arg("p", "(float, default 2) the norm's order; > 0");
OPERATOR_SCHEMA(LpPoolGradient).Apply(GradientSchema).Arg("p", "(float) LpPool's p");

namespace {

// Every pooling op's gradient is "<type>Gradient" on (X, Y, dY).
class GetPoolGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), O(0), GO(0)}, {GI(0)},
                             Def().arg());
  }
};

constexpr char kSecondOrder[] = "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(AveragePool, GetPoolGradient);
REGISTER_GRADIENT(AveragePool1D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool2D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool3D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool, GetPoolGradient);
REGISTER_GRADIENT(MaxPool1D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool2D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool3D, GetPoolGradient);
REGISTER_GRADIENT(LpPool, GetPoolGradient);
SHOULD_NOT_DO_GRADIENT(AveragePoolGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AveragePool1DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AveragePool2DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AveragePool3DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPoolGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPool1DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPool2DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(MaxPool3DGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(LpPoolGradient, kSecondOrder);

}  // namespace doppio
