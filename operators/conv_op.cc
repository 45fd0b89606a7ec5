#include "operators/conv_op.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/blas.h"
#include "operators/conv_op_dnnl.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

// True when the comma-separated engine preference list names `engine`.
bool EngineListHas(const std::string& engines, const std::string& engine) {
  size_t start = 0;
  while (start <= engines.size()) {
    const size_t comma = std::min(engines.find(',', start), engines.size());
    if (engines.compare(start, comma - start, engine) == 0 && comma - start == engine.size()) {
      return true;
    }
    start = comma + 1;
  }
  return false;
}

}  // namespace

ConvOpBase::ConvOpBase(const OperatorDef& def, Workspace* workspace)
    : ConvPoolOpBase(def, workspace),
      force_im2col_(EngineListHas(def.engine(), "IM2COL")),
      conv_algorithm_(ReadConvAlgorithm(def)) {
  DOPPIO_ENFORCE(!conv_args().global_pooling(),
                 "global_pooling applies to pooling ops, not convolution");
  DOPPIO_ENFORCE(conv_args().legacy_pad() != LegacyPadding::kCaffeLegacyPooling,
                 "legacy_pad CAFFE_LEGACY_POOLING applies to pooling ops, not convolution");
}

ConvAlgorithm ReadConvAlgorithm(const OperatorDef& def) {
  const int value = ArgumentHelper(def).GetSingle<int>("conv_algorithm", 0);
  DOPPIO_ENFORCE(value >= 0 && value <= 2, "conv_algorithm ", value,
                 " is not one of 0 (auto), 1 (Winograd), 2 (direct)");
  return static_cast<ConvAlgorithm>(value);
}

void CheckConvInputAndFilter(const OperatorBase& op, StorageOrder order, const Tensor& X,
                             const Tensor& filter) {
  const int rank = X.ndim();
  DOPPIO_ENFORCE(rank >= 3 && rank <= 5, "input '", op.input_name(0), "' has shape ", X.dims(),
                 "; expected 3 to 5 dims (", StorageOrderName(order), " with 1 to 3 spatial dims)");
  DOPPIO_ENFORCE(filter.ndim() == rank, "filter '", op.input_name(1), "' has shape ", filter.dims(),
                 " but input '", op.input_name(0), "' has shape ", X.dims(),
                 "; the filter needs as many dims as the input");
  EnforceSameType(op, 0, X, 1, filter);
}

void CheckChannelBias(const OperatorBase& op, const Tensor& X, const Tensor& bias,
                      int64_t out_channels) {
  EnforceSameType(op, 0, X, 2, bias);
  DOPPIO_ENFORCE(bias.ndim() == 1 && bias.dim(0) == out_channels, "bias '", op.input_name(2),
                 "' has shape ", bias.dims(), "; expected [", out_channels,
                 "] (one value per output channel)");
}

bool ReadNoBias(const OperatorBase& op) {
  const bool no_bias = op.GetSingleArgument<bool>("no_bias", false);
  DOPPIO_ENFORCE(!(no_bias && op.OutputSize() == 3),
                 "with no_bias there is no bias gradient; give 1 or 2 outputs, not 3");
  return no_bias;
}

void CheckOutputGradient(const OperatorBase& op, const Tensor& X, const Tensor& dY,
                         const std::vector<int64_t>& y_dims, const char* forward_output) {
  EnforceSameType(op, 0, X, 2, dY);
  DOPPIO_ENFORCE(dY.dims() == y_dims, "output gradient '", op.input_name(2), "' has shape ",
                 dY.dims(), " but ", forward_output, " has shape ", y_dims);
}

std::vector<TensorShape> ConvGradientShapes(const OperatorDef& def, const TensorShape& X,
                                            const TensorShape& filter, int64_t bias_channels) {
  std::vector<TensorShape> outputs(def.output_size());
  for (TensorShape& shape : outputs) shape.set_unknown_shape(true);
  const bool no_bias = ArgumentHelper(def).GetSingle<bool>("no_bias", false);
  outputs[0] = filter;
  if (!no_bias && outputs.size() >= 2 && bias_channels >= 0) {
    TensorShape bias;
    bias.add_dims(bias_channels);
    bias.set_data_type(filter.data_type());
    outputs[1] = bias;
  }
  if (static_cast<int>(outputs.size()) == (no_bias ? 2 : 3)) outputs.back() = X;
  return outputs;
}

ConvProblem ConvProblemOf(const ConvPoolGeometry& geometry, int64_t out_channels, int64_t group) {
  ConvProblem p;
  p.geometry = geometry;
  p.group = group;
  p.out_channels = out_channels;
  p.in_per_group = geometry.channels / group;
  p.out_per_group = out_channels / group;
  p.col = Im2ColShape::FromGeometry(geometry, p.in_per_group);
  p.kernel_dim = p.in_per_group * geometry.kernel_size();
  return p;
}

ConvProblem ConvOpBase::ResolveConv(const Tensor& X, const Tensor& filter,
                                    const Tensor* bias) const {
  CheckConvInputAndFilter(*this, order(), X, filter);
  const bool nchw = order() == StorageOrder::kNCHW;
  const std::vector<int64_t>& fdims = filter.dims();
  const std::vector<int64_t> filter_kernel(fdims.begin() + (nchw ? 2 : 1),
                                           fdims.end() - (nchw ? 0 : 1));

  const ConvPoolGeometry g = Geometry(X, filter_kernel);
  DOPPIO_ENFORCE(g.kernel == filter_kernel, "the kernel argument ", g.kernel,
                 " does not match filter '", input_name(1), "' of shape ", fdims);
  DOPPIO_ENFORCE(g.channels > 0, "input '", input_name(0), "' of shape ", X.dims(),
                 " has no channels");
  DOPPIO_ENFORCE(g.channels % group() == 0, "group ", group(), " does not divide the ", g.channels,
                 " channels of input '", input_name(0), "'");
  DOPPIO_ENFORCE(fdims[0] > 0 && fdims[0] % group() == 0, "group ", group(),
                 " does not divide the ", fdims[0], " output channels of filter '", input_name(1),
                 "'");
  const ConvProblem p = ConvProblemOf(g, fdims[0], group());
  const int64_t filter_channels = nchw ? fdims[1] : fdims.back();
  DOPPIO_ENFORCE(filter_channels == p.in_per_group, "filter '", input_name(1), "' of shape ", fdims,
                 " takes ", filter_channels, " channels per group but input '", input_name(0),
                 "' has ", g.channels, " channels in ", p.group, " group(s) (", p.in_per_group,
                 " per group)");
  if (bias != nullptr) CheckChannelBias(*this, X, *bias, p.out_channels);
  return p;
}

template <typename T>
void AddChannelBias(StorageOrder order, int64_t batch, int64_t channels, int64_t image_size,
                    const T* bias, T* Y) {
  for (int64_t n = 0; n < batch; ++n) {
    T* y = Y + n * channels * image_size;
    if (order == StorageOrder::kNCHW) {
      for (int64_t c = 0; c < channels; ++c) {
        T* row = y + c * image_size;
        for (int64_t i = 0; i < image_size; ++i) row[i] += bias[c];
      }
    } else {
      for (int64_t i = 0; i < image_size; ++i) {
        T* pixel = y + i * channels;
        for (int64_t c = 0; c < channels; ++c) pixel[c] += bias[c];
      }
    }
  }
}

template <typename T>
void SumPerChannel(StorageOrder order, int64_t batch, int64_t channels, int64_t image_size,
                   const T* dY, T* dbias) {
  std::fill(dbias, dbias + channels, T(0));
  for (int64_t n = 0; n < batch; ++n) {
    const T* dy = dY + n * channels * image_size;
    if (order == StorageOrder::kNCHW) {
      for (int64_t c = 0; c < channels; ++c) {
        const T* row = dy + c * image_size;
        T sum = 0;
        for (int64_t i = 0; i < image_size; ++i) sum += row[i];
        dbias[c] += sum;
      }
    } else {
      for (int64_t i = 0; i < image_size; ++i) {
        const T* pixel = dy + i * channels;
        for (int64_t c = 0; c < channels; ++c) dbias[c] += pixel[c];
      }
    }
  }
}

template void AddChannelBias<float>(StorageOrder, int64_t, int64_t, int64_t, const float*,
                                    float*);
template void AddChannelBias<double>(StorageOrder, int64_t, int64_t, int64_t, const double*,
                                     double*);
template void SumPerChannel<float>(StorageOrder, int64_t, int64_t, int64_t, const float*,
                                   float*);
template void SumPerChannel<double>(StorageOrder, int64_t, int64_t, int64_t, const double*,
                                    double*);

namespace {

// ConvFusion must say what it fuses (Caffe2 refuses it without
// fusion_type); Conv ignores the argument, as Caffe2's CPU Conv does. Read
// from the def, so the kernel and its layout advisor agree.
int ReadFusionType(const OperatorDef& def) {
  if (def.type() != "ConvFusion") return kConvFusionUnknown;
  const ArgumentHelper args(def);
  DOPPIO_ENFORCE(args.Has("fusion_type"),
                 "ConvFusion needs the argument fusion_type (1: Conv + activation, 2: Conv + "
                 "sum, 3: Conv + sum + activation)");
  const int fusion_type = args.GetSingle<int>("fusion_type", kConvFusionUnknown);
  DOPPIO_ENFORCE(fusion_type == kConvFusionRelu || fusion_type == kConvFusionSum ||
                     fusion_type == kConvFusionSumRelu,
                 "fusion_type ", fusion_type,
                 " is not supported; 1 (Conv + activation), 2 (Conv + sum) and 3 (Conv + sum + "
                 "activation) are");
  if (fusion_type != kConvFusionRelu) {
    DOPPIO_ENFORCE(def.input_size() >= 3, "fusion_type ", fusion_type,
                   " needs the tensor to sum into as its last input (X, filter[, bias], S)");
  }
  return fusion_type;
}

bool SumsInto(int fusion_type) {
  return fusion_type == kConvFusionSum || fusion_type == kConvFusionSumRelu;
}

EltwiseFn ReadFusedActivation(const OperatorDef& def, int fusion_type) {
  if (fusion_type != kConvFusionRelu && fusion_type != kConvFusionSumRelu) return {};
  const ArgumentHelper args(def);
  const std::string activation = args.GetSingle<std::string>("activation", "Relu");
  const EltwiseFn fn = EltwiseOfActivation(activation, [&](const std::string& name, float d) {
    return args.GetSingle<float>("activation_" + name, d);
  });
  DOPPIO_ENFORCE(!fn.empty(), "activation '", activation,
                 "' cannot be fused; ConvFusion fuses Relu, LeakyRelu, Clip, Sigmoid, Tanh, "
                 "Elu, Swish and HardSwish");
  if (fn.algorithm == EltwiseAlgorithm::kClip) {
    DOPPIO_ENFORCE(fn.alpha <= fn.beta, "argument 'activation_min' (", fn.alpha,
                   ") is greater than 'activation_max' (", fn.beta, ")");
  }
  return fn;
}

// Caffe2 ideep's training_mode 0: a forward-only use.
bool ReadInferenceMode(const OperatorDef& def) {
  const ArgumentHelper args(def);
  return args.Has("training_mode") && args.GetSingle<int>("training_mode", 1) == 0;
}

// The activation over Y after the im2col path: oneDNN's kernel where it has
// one, else the scalar formula (float64, or oneDNN refusing).
template <typename T>
void ActivationInPlace(const EltwiseFn& fn, int64_t count, T* y) {
  if constexpr (std::is_same<T, float>::value) {
    if (DnnlEltwiseForward(fn, count, y, y)) return;
  }
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<T>(EltwiseReference(fn, static_cast<float>(y[i])));
  }
}

}  // namespace

ConvOp::ConvOp(const OperatorDef& def, Workspace* workspace)
    : ConvOpBase(def, workspace),
      fusion_type_(ReadFusionType(def)),
      post_op_(ReadFusedActivation(def, fusion_type_)),
      inference_(ReadInferenceMode(def)) {}
ConvOp::~ConvOp() = default;

const Tensor* ConvOp::Summand(const Tensor& X, const std::vector<int64_t>& out_dims) const {
  if (!SumsInto(fusion_type_)) return nullptr;
  const int last = InputSize() - 1;
  const Tensor& S = Input(last);
  DOPPIO_ENFORCE(S.dims() == out_dims && S.dtype() == X.dtype(), "the tensor to sum into, '",
                 input_name(last), "' (", S.dims(), ", ", DataTypeName(S.dtype()),
                 "), must have the convolution's output shape ", out_dims, " and X's type ",
                 DataTypeName(X.dtype()));
  return &S;
}

void ConvOp::RunOnDevice() {
  const bool sums = SumsInto(fusion_type_);
  const Tensor& X = Input(0);
  const Tensor& filter = Input(1);
  const Tensor* bias = InputSize() - (sums ? 1 : 0) == 3 ? &Input(2) : nullptr;
  const ConvProblem p = ResolveConv(X, filter, bias);
  const std::vector<int64_t> out_dims = p.geometry.OutputDims(p.out_channels);
  const Tensor* S = Summand(X, out_dims);
  Tensor* Y = Output(0);
  // In place (Caffe2's form of the sum fusions), Y already holds the summand.
  const bool in_place = S != nullptr && static_cast<const Tensor*>(Y) == S;
  if (!in_place) Y->Resize(out_dims);
  if (X.dtype() == DataType::kFloat && !force_im2col() && Y->numel() > 0) {
    if (dnnl_ == nullptr) dnnl_ = std::make_unique<DnnlConvForward>();
    // ConvFusion and training_mode 0 are inference: the filter is a constant
    // (as Caffe2 ideep's), so a Winograd filter transform is done once.
    DnnlConvForwardOptions options;
    options.post_op = post_op_;
    options.constant_filter = fusion_type_ != kConvFusionUnknown || inference_;
    options.sum = S != nullptr ? S->data<float>() : nullptr;
    options.inference = inference_;
    options.algorithm = conv_algorithm();
    if (dnnl_->Run(p, X.data<float>(), filter.data<float>(),
                   bias != nullptr ? bias->data<float>() : nullptr, Y->mutable_data<float>(),
                   options)) {
      return;
    }
  }
  Tensor saved;  // the summand, when Y (in place) is about to overwrite it
  if (in_place) saved.CopyFrom(*S);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunIm2Col<T>(p, X, filter, bias, Y);
    T* y = Y->template mutable_data<T>();
    if (S != nullptr) {
      const T* summand = (in_place ? saved : *S).template data<T>();
      for (int64_t i = 0; i < Y->numel(); ++i) y[i] += summand[i];
    }
    if (!post_op_.empty()) ActivationInPlace<T>(post_op_, Y->numel(), y);
  });
}

template <typename T>
void ConvOp::RunIm2Col(const ConvProblem& p, const Tensor& X, const Tensor& filter,
                       const Tensor* bias, Tensor* Y) {
  const ConvPoolGeometry& g = p.geometry;
  const int64_t image_in = g.input_image_size();
  const int64_t image_out = g.output_image_size();
  const int64_t C = g.channels, M = p.out_channels, G = p.group;
  const int64_t Cg = p.in_per_group, Mg = p.out_per_group, K = p.kernel_dim;
  const T* x = X.data<T>();
  const T* w = filter.data<T>();
  T* y = Y->mutable_data<T>();
  if (Y->numel() == 0) return;
  // With a 1x1 unit-stride kernel the image already is the column matrix
  // (except NHWC groups, whose channels interleave).
  const bool nchw = g.order == StorageOrder::kNCHW;
  const bool identity = p.col.IsIdentity() && (nchw || G == 1);
  T* col = identity ? nullptr : ScratchBuffer<T>(col_buffer_, K * image_out);
  T* group_out = (!nchw && G > 1) ? ScratchBuffer<T>(group_buffer_, image_out * Mg) : nullptr;
  for (int64_t n = 0; n < g.batch; ++n) {
    const T* xn = x + n * C * image_in;
    T* yn = y + n * M * image_out;
    if (nchw) {
      for (int64_t gi = 0; gi < G; ++gi) {
        const T* xg = xn + gi * Cg * image_in;
        if (!identity) Im2ColNd(g.order, p.col, xg, col);
        // Y_g [Mg x P] = W_g [Mg x K] * col [K x P]
        blas::Gemm<T>(false, false, Mg, image_out, K, T(1), w + gi * Mg * K,
                      identity ? xg : col, T(0), yn + gi * Mg * image_out);
      }
    } else if (G == 1) {
      if (!identity) Im2ColNd(g.order, p.col, xn, col);
      // Y [P x M] = col [P x K] * W^T, W being [M x K]
      blas::Gemm<T>(false, true, image_out, M, K, T(1), identity ? xn : col, w, T(0), yn);
    } else {
      for (int64_t gi = 0; gi < G; ++gi) {
        Im2ColNd(g.order, p.col, xn + gi * Cg, col);
        blas::Gemm<T>(false, true, image_out, Mg, K, T(1), col, w + gi * Mg * K, T(0),
                      group_out);
        ScatterGroupChannels(image_out, M, Mg, gi, group_out, yn);
      }
    }
  }
  if (bias != nullptr) {
    AddChannelBias<T>(g.order, g.batch, M, image_out, bias->data<T>(), y);
  }
}

namespace {

// Advice for transforms/channels_last: the layout oneDNN would read X in for
// this def and these shapes (4-D float X, NCHW or NHWC filter as the order
// says). ConvFusion's activation is a post-op, which may change oneDNN's pick.
ActivationLayout AdviseConvLayout(const OperatorDef& def, const std::vector<TensorShape>& in) {
  if (in.size() < 2 || in[0].data_type() != TensorProto::FLOAT || in[0].dims_size() != 4 ||
      in[1].dims_size() != 4 || def.engine() == "IM2COL") {
    return ActivationLayout::kNoPreference;
  }
  const ConvPoolArgs conv_args(def);
  const bool nchw = conv_args.order() == StorageOrder::kNCHW;
  const std::vector<int64_t> x(in[0].dims().begin(), in[0].dims().end());
  const std::vector<int64_t> w(in[1].dims().begin(), in[1].dims().end());
  const std::vector<int64_t> kernel(w.begin() + (nchw ? 2 : 1), w.end() - (nchw ? 0 : 1));
  const ConvPoolGeometry g = conv_args.Resolve(x, def.input(0), kernel);
  const int64_t group = conv_args.group();
  if (g.kernel != kernel || g.channels % group != 0 || w[0] % group != 0) {
    return ActivationLayout::kNoPreference;
  }
  // The op's own readers: a def it would refuse throws, which AdviseLayout
  // answers with no preference.
  const int fusion = ReadFusionType(def);
  return DnnlConvSourceLayout(ConvProblemOf(g, w[0], group), ReadFusedActivation(def, fusion),
                              SumsInto(fusion), ReadInferenceMode(def), ReadConvAlgorithm(def));
}

[[maybe_unused]] const bool kConvLayoutAdvice =
    RegisterLayoutAdvisor("Conv", AdviseConvLayout) &&
    RegisterLayoutAdvisor("ConvFusion", AdviseConvLayout);

}  // namespace

REGISTER_CPU_OPERATOR(Conv, ConvOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv, IM2COL, ConvOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv, DNNL, ConvOp);
REGISTER_CPU_OPERATOR(Conv1D, ConvOp);
REGISTER_CPU_OPERATOR(Conv2D, ConvOp);
REGISTER_CPU_OPERATOR(Conv3D, ConvOp);
REGISTER_CPU_OPERATOR(ConvFusion, ConvOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvFusion, IM2COL, ConvOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvFusion, DNNL, ConvOp);

namespace {

void ConvSchemaCommon(OpSchema& schema) {
  schema.NumInputs(2, 3)
      .NumOutputs(1)
      .TensorInferenceFunction(ConvPoolShapeInference(/*channels_from_filter=*/true))
      .Arg("kernel",
           "(int) kernel size of every spatial axis; also 'kernels' (one per "
           "axis) or kernel_h/kernel_w. Default: the filter's spatial dims")
      .Arg("stride", "(int, default 1) stride of every axis; also 'strides', stride_h/stride_w")
      .Arg("pad",
           "(int, default 0) padding of both sides of every axis; also 'pads' "
           "[begin per axis..., end per axis...] or pad_t/pad_l/pad_b/pad_r")
      .Arg("dilation",
           "(int, default 1) kernel dilation; also 'dilations', "
           "dilation_h/dilation_w")
      .Arg("group", "(int, default 1) number of channel groups; C and M must divide by it")
      .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
      .Arg("legacy_pad", "(int, default 0) Caffe2 legacy padding: 1 VALID, 2 SAME")
      .Arg("shared_buffer", "(int, default 0) accepted for compatibility; buffers are per op")
      .Arg("training_mode",
           "(int) Caffe2 ideep's: 0 marks a forward-only (inference) use, "
           "which may pick faster layouts on oneDNN and, as ideep, keeps the "
           "filter's oneDNN layout between runs (redone when the filter's "
           "storage or the shape changes); the inference passes set it")
      .Arg("conv_algorithm",
           "(int, default 0) Caffe2 ideep's, CPU float32: 0 auto (Winograd F(4x4, 3x3) for "
           "3x3 unit-stride convolutions of >= 32 channels, where it measured faster: "
           "oneDNN's (AVX-512), else for inference (training_mode 0, ConvFusion) in NHWC "
           "Doppio's own with outputs of 8x8 or more; else direct), 1 Winograd wherever "
           "either has it, 2 direct only (Doppio's). Winograd's values differ from direct "
           "ones by rounding")
      .Arg("ws_nbytes_limit",
           "(int, default 64 MiB) CUDA (cuDNN): the most workspace "
           "bytes a chosen algorithm may use")
      .Arg("deterministic", "(bool, default 0) CUDA (cuDNN): only deterministic algorithms")
      .Arg("exhaustive_search",
           "(bool, default 0) CUDA (cuDNN): time the algorithms "
           "(cudnnFind*) instead of asking cuDNN's heuristics")
      .Arg("enable_tensor_core",
           "(bool, default 0) CUDA (cuDNN): allow tensor-core (TF32) "
           "math on float32; off keeps float32 exact")
      .Input(0, "X",
             "input [N, C, spatial...] (NHWC: [N, spatial..., C]), 1 to 3 spatial "
             "dims, float32 or float64")
      .Input(1, "filter", "[M, C / group, kernel...] (NHWC: [M, kernel..., C / group])")
      .Input(2, "bias", "optional [M], added to every output position of its channel")
      .Output(0, "Y",
              "[N, M, output...] (NHWC: [N, output..., M]), output = "
              "(in + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride + 1")
      .Doc(
          "N-d convolution (cross-correlation, as in Caffe2) of X with the filter, plus the "
          "optional bias. float32 runs on oneDNN where it accepts the case; otherwise, and "
          "for float64 or engine \"IM2COL\", on im2col + GEMM.");
}

}  // namespace

std::vector<OperatorDef> GetConvGradient::GetGradientDefs() {
  const ArgumentHelper args(Def());
  const bool compute_dX = !args.GetSingle<bool>("no_gradient_to_input", false);
  const bool has_bias = Def().input_size() == 3;
  std::vector<std::string> outputs{GI(1)};
  if (has_bias) outputs.push_back(GI(2));
  if (compute_dX) outputs.push_back(GI(0));
  google::protobuf::RepeatedPtrField<Argument> gradient_args;
  for (const Argument& arg : Def().arg()) {
    if (arg.name() != "no_bias") *gradient_args.Add() = arg;
  }
  if (!has_bias) {
    Argument* no_bias = gradient_args.Add();
    no_bias->set_name("no_bias");
    no_bias->set_i(1);
  }
  return SingleGradientDef(Def().type() + "Gradient", "", {I(0), I(1), GO(0)}, outputs,
                           gradient_args);
}

OPERATOR_SCHEMA(Conv).LowPrecisionInFloat32().Apply(ConvSchemaCommon).CostInferenceFunction(CostInferenceForConv);
OPERATOR_SCHEMA(Conv1D).Apply(ConvSchemaCommon).CostInferenceFunction(CostInferenceForConv);
OPERATOR_SCHEMA(Conv2D).Apply(ConvSchemaCommon).CostInferenceFunction(CostInferenceForConv);
OPERATOR_SCHEMA(Conv3D).Apply(ConvSchemaCommon).CostInferenceFunction(CostInferenceForConv);

// Inputs X, filter, bias as Conv's: what Caffe2's ideep backend and our
// fusion pass (transforms/fuse_activation) write for Conv + Relu.
OPERATOR_SCHEMA(ConvFusion)
    .Apply(ConvSchemaCommon)
    .NumInputs(2, 4)
    .AllowInplace({{2, 0}, {3, 0}})
    .Input(3, "S",
           "with fusion_type 2 or 3, the tensor summed into the output (the last "
           "input, input 2 without a bias), of the output's shape; may be the output")
    .Arg("fusion_type",
         "(int, required) what follows the convolution: 1 = an activation (CONV_RELU), "
         "2 = a sum with the last input (CONV_SUM), 3 = that sum then an activation "
         "(CONV_SUM_RELU)",
         /*required=*/true)
    .Arg("activation",
         "(string, default \"Relu\") with fusion_type 1 or 3, the activation op "
         "fused: Relu, LeakyRelu, Clip, Sigmoid, Tanh, Elu, Swish or HardSwish (a Doppio "
         "extension; Caffe2's ConvFusion knows Relu only)")
    .Arg("activation_alpha", "(float) LeakyRelu's or Elu's alpha (defaults 0.01, 1)")
    .Arg("activation_min", "(float) Clip's min (default: the lowest float)")
    .Arg("activation_max", "(float) Clip's max (default: the largest float)")
    .Doc(
        "Inference-only Conv fused with the op after it (Caffe2's ideep ConvFusion): with "
        "fusion_type 1, Y = act(Conv(X, filter, bias)), act Relu unless `activation` names "
        "another; with 2, Y = Conv(X, filter, bias) + S; with 3, Y = act(Conv(...) + S) (a "
        "residual block's Add + Relu). Applied inside the kernel (oneDNN post-ops) so Y is "
        "written once. Made by the "
        "inference fusion "
        "passes (doppio.transformations, run_net --optimize); it has no gradient. As "
        "Caffe2's ideep ConvFusion outside training_mode, the filter is a constant: its "
        "conversion to oneDNN's layout is kept between runs and redone only when the "
        "filter's storage or the shapes change.");

REGISTER_GRADIENT(Conv, GetConvGradient);
REGISTER_GRADIENT(Conv1D, GetConvGradient);
REGISTER_GRADIENT(Conv2D, GetConvGradient);
REGISTER_GRADIENT(Conv3D, GetConvGradient);
SHOULD_NOT_DO_GRADIENT(ConvFusion,
                       "it is an inference-only fusion of Conv + activation; train the unfused ops "
                       "and fuse the predict net");

}  // namespace doppio
