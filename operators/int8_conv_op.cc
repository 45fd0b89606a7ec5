#include "operators/int8_conv_op.h"

#include <algorithm>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/conv_op.h"
#include "operators/conv_pool_op_base.h"

namespace doppio {
namespace {

// Direct convolution: Winograd's transforms would round the integers.
constexpr int kDirectAlgorithm = static_cast<int>(ConvAlgorithm::kDirect);

const int8::Int8TensorCPU* OptionalBias(const OperatorBase& op, int index, int64_t channels) {
  if (op.InputSize() <= index) return nullptr;
  const int8::Int8TensorCPU& b = int8::Int8Input(op, index, DataType::kInt32);
  DOPPIO_ENFORCE(b.t.numel() == channels, "bias '", op.input_name(index), "' has ", b.t.numel(),
                 " values (", b.t.dims(), "), one per output channel (", channels, ") expected");
  return &b;
}

// The float32 path's per-channel offsets: the int32 bias, or zeros.
void BiasOffsets(const int8::Int8TensorCPU* bias, int64_t channels, std::vector<int64_t>* out) {
  out->assign(channels, 0);
  if (bias != nullptr) std::copy_n(bias->t.data<int32_t>(), channels, out->begin());
}

ConvPoolGeometry FcAsConvolution(int64_t rows, int64_t k) {
  ConvPoolGeometry g;
  g.order = StorageOrder::kNHWC;
  g.batch = rows;
  g.channels = k;
  g.input = g.kernel = g.stride = g.dilation = g.output = {1, 1};
  g.pads = {0, 0, 0, 0};
  return g;
}

}  // namespace

void CenteredWeights::Update(const int8::Int8TensorCPU& w, Tensor* destination) {
  if (w.t.raw_data() == data_ && w.t.dims() == dims_ && w.zero_point == zero_point_ &&
      destination->dims() == dims_) {
    return;
  }
  destination->Resize(w.t.dims());
  int8::CenteredIntegers(w.t.data<uint8_t>(), w.t.numel(), w.zero_point,
                         destination->mutable_data<float>());
  data_ = w.t.raw_data();
  dims_ = w.t.dims();
  zero_point_ = w.zero_point;
}

template <bool kRelu>
Int8ConvOp<kRelu>::Int8ConvOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      y_(int8::OutputQuantization(*this)),
      args_(def),
      twin_("Conv", def, 2, 1, {IntArgument("conv_algorithm", kDirectAlgorithm)}) {
  DOPPIO_ENFORCE(args_.order() == StorageOrder::kNHWC,
                 "Int8 convolutions take NHWC tensors (as Caffe2's); set order \"NHWC\"");
}

template <bool kRelu>
ConvPoolGeometry Int8ConvOp<kRelu>::Geometry(const Tensor& x, const Tensor& w) const {
  DOPPIO_ENFORCE(x.ndim() == 4 && w.ndim() == 4, "X '", input_name(0), "' must be [N, H, W, C] ",
                 "and filter '", input_name(1), "' [M, kH, kW, C / group], not ", x.dims(), " and ",
                 w.dims());
  const ConvPoolGeometry g = args_.Resolve(x.dims(), input_name(0), {w.dim(1), w.dim(2)});
  const int64_t group = args_.group();
  DOPPIO_ENFORCE(
      g.kernel == std::vector<int64_t>({w.dim(1), w.dim(2)}) && g.channels % group == 0 &&
          w.dim(3) * group == g.channels && w.dim(0) % group == 0,
      "filter '", input_name(1), "' of shape ", w.dims(), " does not fit X '", input_name(0),
      "' of shape ", x.dims(), " with kernel ", g.kernel, " and group ", group);
  return g;
}

template <bool kRelu>
void Int8ConvOp<kRelu>::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  const int8::Int8TensorCPU& W = int8::Int8Input(*this, 1);
  const ConvPoolGeometry g = Geometry(X.t, W.t);
  const int64_t M = W.t.dim(0);
  const int8::Int8TensorCPU* B = OptionalBias(*this, 2, M);
  const double multiplier = static_cast<double>(X.scale) * W.scale / y_.scale;
  const int8::Limits limits = int8::ActivationLimits(y_, kRelu);
  const std::vector<int64_t> out_dims = g.OutputDims(M);
  const int64_t rows = g.batch * g.output_image_size();
  // The output is written by one path or the other; inputs are not read
  // after it is shaped (it is never an input: the schema allows no in-place).
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, out_dims);
  if (dnnl_.Run(g, args_.group(), X, W, B != nullptr ? B->t.data<int32_t>() : nullptr, y_, kRelu,
                Y->t.mutable_data<uint8_t>())) {
    return;
  }
  Tensor* xf = twin_.input(0);
  xf->Resize(X.t.dims());
  int8::CenteredIntegers(X.t.data<uint8_t>(), X.t.numel(), X.zero_point, xf->mutable_data<float>());
  weights_.Update(W, twin_.input(1));
  twin_.Run();
  BiasOffsets(B, M, &offsets_);
  int8::RequantizeAccumulators(twin_.output().data<float>(), rows, M, offsets_.data(), multiplier,
                               y_, limits, Y->t.mutable_data<uint8_t>());
}

Int8ConvTransposeOp::Int8ConvTransposeOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      y_(int8::OutputQuantization(*this)),
      twin_("ConvTranspose", def, 2) {
  DOPPIO_ENFORCE(ConvPoolArgs(def).order() == StorageOrder::kNHWC,
                 "Int8ConvTranspose takes NHWC tensors (as Caffe2's); set order \"NHWC\"");
}

void Int8ConvTransposeOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  const int8::Int8TensorCPU& W = int8::Int8Input(*this, 1);
  const double multiplier = static_cast<double>(X.scale) * W.scale / y_.scale;
  Tensor* xf = twin_.input(0);
  xf->Resize(X.t.dims());
  int8::CenteredIntegers(X.t.data<uint8_t>(), X.t.numel(), X.zero_point, xf->mutable_data<float>());
  weights_.Update(W, twin_.input(1));
  twin_.Run();
  const Tensor& acc = twin_.output();
  const int64_t M = acc.dim(-1);
  const int8::Int8TensorCPU* B = OptionalBias(*this, 2, M);
  BiasOffsets(B, M, &offsets_);
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, acc.dims());
  int8::RequantizeAccumulators(acc.data<float>(), M > 0 ? acc.numel() / M : 0, M, offsets_.data(),
                               multiplier, y_, int8::ActivationLimits(y_, false),
                               Y->t.mutable_data<uint8_t>());
}

Int8FCOp::Int8FCOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      y_(int8::OutputQuantization(*this)),
      twin_("FC", def, 3) {}

void Int8FCOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  const int8::Int8TensorCPU& W = int8::Int8Input(*this, 1);
  DOPPIO_ENFORCE(X.t.ndim() >= 1 && W.t.ndim() == 2, "X '", input_name(0),
                 "' must be at least 1-D and W '", input_name(1), "' 2-D [N, K], not ", X.t.dims(),
                 " and ", W.t.dims());
  const int64_t N = W.t.dim(0);
  const int8::Int8TensorCPU* B = OptionalBias(*this, 2, N);
  const double multiplier = static_cast<double>(X.scale) * W.scale / y_.scale;
  const int64_t K = X.t.SizeFromDim(1), rows = X.t.dim(0);
  if (K == W.t.dim(1) && rows > 0 && K > 0) {
    // X W^T is a 1x1 convolution of `rows` 1x1 images of K channels.
    int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, {rows, N});
    if (dnnl_.Run(FcAsConvolution(rows, K), 1, X, W, B->t.data<int32_t>(), y_, false,
                  Y->t.mutable_data<uint8_t>())) {
      return;
    }
  }
  Tensor* xf = twin_.input(0);
  xf->Resize(X.t.dims());
  int8::CenteredIntegers(X.t.data<uint8_t>(), X.t.numel(), X.zero_point, xf->mutable_data<float>());
  weights_.Update(W, twin_.input(1));
  Tensor* zero_bias = twin_.input(2);
  if (zero_bias->dims() != std::vector<int64_t>{N}) {
    zero_bias->Resize({N});
    std::fill_n(zero_bias->mutable_data<float>(), N, 0.0f);
  }
  twin_.Run();
  const Tensor& acc = twin_.output();
  BiasOffsets(B, N, &offsets_);
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, acc.dims());
  int8::RequantizeAccumulators(acc.data<float>(), N > 0 ? acc.numel() / N : 0, N, offsets_.data(),
                               multiplier, y_, int8::ActivationLimits(y_, false),
                               Y->t.mutable_data<uint8_t>());
}

REGISTER_CPU_OPERATOR(Int8Conv, Int8ConvOp<false>);
REGISTER_CPU_OPERATOR(Int8ConvRelu, Int8ConvOp<true>);
REGISTER_CPU_OPERATOR(Int8ConvTranspose, Int8ConvTransposeOp);
REGISTER_CPU_OPERATOR(Int8FC, Int8FCOp);

namespace {

// What the convolution and the transposed one share: their window, NHWC,
// the output quantization, the bias.
void Int8WindowSchema(OpSchema& schema) {
  schema.NumInputs(2, 3)
      .NumOutputs(1)
      .Arg("kernel", "(int) kernel size; also kernels, kernel_h/kernel_w. Default: the filter's")
      .Arg("stride", "(int, default 1) also strides, stride_h/stride_w")
      .Arg("pad", "(int, default 0) also pads, pad_t/pad_l/pad_b/pad_r")
      .Arg("order", "(string) must be \"NHWC\"", true)
      .Apply(int8::OutputQuantizationArgs)
      .Input(0, "X", "Int8 [N, H, W, C] (uint8)")
      .Input(2, "bias", "Int8 [M] (int32, scale X.scale x filter.scale, zero point 0)")
      .Output(0, "Y", "Int8 [N, oH, oW, M] (uint8)");
}

void Int8ConvSchema(OpSchema& schema) {
  schema.Apply(Int8WindowSchema)
      .Arg("dilation", "(int, default 1) also dilations, dilation_h/dilation_w")
      .Arg("group", "(int, default 1) channel groups (depthwise: group = C = M)")
      .Input(1, "filter", "Int8 [M, kH, kW, C / group] (uint8)");
}

}  // namespace

OPERATOR_SCHEMA(Int8Conv)
    .Apply(Int8ConvSchema)
    .Doc(
        "Quantized 2-D convolution (Caffe2's QNNPACK op): Y = requantize(conv(X - X.zero_point, "
        "filter - filter.zero_point) + bias).");
OPERATOR_SCHEMA(Int8ConvRelu)
    .Apply(Int8ConvSchema)
    .Doc("Int8Conv followed by Relu, fused: the output is clamped at the quantized 0.");

OPERATOR_SCHEMA(Int8ConvTranspose)
    .Apply(Int8WindowSchema)
    .Arg("adj", "(int, default 0) extra output size at the end; also adj_h/adj_w")
    .Input(1, "filter", "Int8 [C, kH, kW, M] (uint8)")
    .Doc(
        "Quantized transposed convolution (Caffe2's QNNPACK op): Y = requantize("
        "conv_transpose(X - X.zero_point, filter - filter.zero_point) + bias).");

OPERATOR_SCHEMA(Int8FC)
    .NumInputs(3)
    .NumOutputs(1)
    .Apply(int8::OutputQuantizationArgs)
    .Input(0, "X", "Int8 (uint8) read as [M, K], K the product of the dims after the first")
    .Input(1, "W", "Int8 [N, K] (uint8)")
    .Input(2, "bias", "Int8 [N] (int32, scale X.scale x W.scale, zero point 0)")
    .Output(0, "Y", "Int8 [M, N] (uint8)")
    .Doc(
        "Quantized fully connected layer (Caffe2's QNNPACK op): Y = requantize((X - X.zp) "
        "(W - W.zp)^T + bias).");

SHOULD_NOT_DO_GRADIENT(Int8Conv, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8ConvRelu, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8ConvTranspose, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8FC, int8::kInferenceOnly);

}  // namespace doppio
