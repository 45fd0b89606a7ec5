#include "operators/conv_transpose_op.h"

#include <algorithm>
#include <numeric>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/blas.h"
#include "operators/conv_op.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

int64_t Product(const std::vector<int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), int64_t{1}, std::multiplies<int64_t>());
}

}  // namespace

int64_t ConvTransposeProblem::input_image_size() const { return Product(input); }
int64_t ConvTransposeProblem::output_image_size() const { return Product(output); }

std::vector<int64_t> ConvTransposeProblem::OutputDims() const {
  std::vector<int64_t> dims{batch};
  if (order == StorageOrder::kNCHW) dims.push_back(out_channels);
  dims.insert(dims.end(), output.begin(), output.end());
  if (order == StorageOrder::kNHWC) dims.push_back(out_channels);
  return dims;
}

ConvTransposeOpBase::ConvTransposeOpBase(const OperatorDef& def, Workspace* workspace)
    : ConvPoolOpBase(def, workspace), adj_(def) {
  DOPPIO_ENFORCE(!conv_args().global_pooling() &&
                     conv_args().legacy_pad() != LegacyPadding::kCaffeLegacyPooling,
                 "global_pooling and CAFFE_LEGACY_POOLING do not apply to ",
                 "transposed convolution");
}

ConvTransposeAdj::ConvTransposeAdj(const OperatorDef& def) {
  const ArgumentHelper args(def);
  const bool has_hw = args.Has("adj_h") || args.Has("adj_w");
  const int forms = (args.Has("adj") ? 1 : 0) + (args.Has("adjs") ? 1 : 0) + (has_hw ? 1 : 0);
  // Parsed from the OperatorDef alone (plans are made outside a net too):
  // the op's type is part of the message.
  DOPPIO_ENFORCE(forms <= 1, "op ", def.type(), ": give only one of 'adj', 'adjs' and adj_h/adj_w");
  if (args.Has("adj")) {
    values_ = {args.GetSingle<int64_t>("adj", 0)};
    scalar_ = true;
  } else if (args.Has("adjs")) {
    values_ = args.GetRepeated<int64_t>("adjs");
  } else if (has_hw) {
    DOPPIO_ENFORCE(args.Has("adj_h") && args.Has("adj_w"), "op ", def.type(),
                   ": give both adj_h and adj_w or neither");
    values_ = {args.GetSingle<int64_t>("adj_h", 0), args.GetSingle<int64_t>("adj_w", 0)};
  }
  for (int64_t value : values_) {
    DOPPIO_ENFORCE(value >= 0, "op ", def.type(), ": adj values must be >= 0, got ", values_);
  }
}

std::vector<int64_t> ConvTransposeAdj::PerAxis(int num_spatial, const std::string& op,
                                               const std::string& input_name) const {
  if (values_.empty()) return std::vector<int64_t>(num_spatial, 0);
  if (scalar_) return std::vector<int64_t>(num_spatial, values_[0]);
  DOPPIO_ENFORCE(static_cast<int>(values_.size()) == num_spatial, "op ", op, ": adj values ",
                 values_, " do not fit input '", input_name, "' with ", num_spatial,
                 " spatial dims");
  return values_;
}

ConvTransposeProblem ConvTransposeOpBase::Resolve(const Tensor& X, const Tensor& filter,
                                                  const Tensor* bias) const {
  CheckConvInputAndFilter(*this, order(), X, filter);
  const int num_spatial = X.ndim() - 2;
  const bool nchw = order() == StorageOrder::kNCHW;
  const std::vector<int64_t>& xdims = X.dims();
  const std::vector<int64_t>& fdims = filter.dims();

  ConvTransposeProblem p;
  p.order = order();
  p.batch = xdims[0];
  p.in_channels = nchw ? xdims[1] : xdims.back();
  p.input.assign(xdims.begin() + (nchw ? 2 : 1), xdims.end() - (nchw ? 0 : 1));
  const std::vector<int64_t> kernel(fdims.begin() + (nchw ? 2 : 1), fdims.end() - (nchw ? 0 : 1));
  if (conv_args().has_kernel_argument()) {
    const std::vector<int64_t> given = conv_args().Kernel(num_spatial, input_name(0));
    DOPPIO_ENFORCE(given == kernel, "the kernel argument ", given, " does not match filter '",
                   input_name(1), "' of shape ", fdims);
  }
  const std::vector<int64_t> stride = conv_args().Stride(num_spatial, input_name(0));
  const std::vector<int64_t> dilation = conv_args().Dilation(num_spatial, input_name(0));
  std::vector<int64_t> pads(2 * num_spatial, 0);
  if (conv_args().legacy_pad() == LegacyPadding::kNotSet) {
    pads = conv_args().Pads(num_spatial, input_name(0));
  }
  const std::vector<int64_t> adj = adj_.PerAxis(num_spatial, type(), input_name(0));

  p.group = group();
  DOPPIO_ENFORCE(p.in_channels > 0 && p.in_channels % p.group == 0, "group ", p.group,
                 " does not divide the ", p.in_channels, " channels of input '", input_name(0),
                 "'");
  DOPPIO_ENFORCE(fdims[0] == p.in_channels, "filter '", input_name(1), "' of shape ", fdims,
                 " is for ", fdims[0], " input channels but input '", input_name(0), "' has ",
                 p.in_channels);
  p.in_per_group = p.in_channels / p.group;
  p.out_per_group = nchw ? fdims[1] : fdims.back();
  p.out_channels = p.out_per_group * p.group;
  DOPPIO_ENFORCE(p.out_per_group > 0, "filter '", input_name(1), "' of shape ", fdims,
                 " has no output channels");

  p.output.resize(num_spatial);
  for (int axis = 0; axis < num_spatial; ++axis) {
    DOPPIO_ENFORCE(adj[axis] <= stride[axis], "adj ", adj[axis], " of spatial dim ", axis,
                   " exceeds its stride ", stride[axis]);
    const int64_t full = (p.input[axis] - 1) * stride[axis] +
                         dilation[axis] * (kernel[axis] - 1) + 1 + adj[axis];
    p.output[axis] = full - pads[axis] - pads[num_spatial + axis];
    DOPPIO_ENFORCE(p.input[axis] > 0 && p.output[axis] > 0, "input '", input_name(0), "' of shape ",
                   xdims, " gives output size ", p.output[axis], " on spatial dim ", axis,
                   " (pads ", pads[axis], " + ", pads[num_spatial + axis], " remove all of it)");
  }
  if (bias != nullptr) CheckChannelBias(*this, X, *bias, p.out_channels);
  p.col.image = p.output;
  p.col.output = p.input;
  p.col.kernel = kernel;
  p.col.stride = stride;
  p.col.dilation = dilation;
  p.col.pad_begin.assign(pads.begin(), pads.begin() + num_spatial);
  p.col.channels = p.out_per_group;
  p.col.pixel_stride = p.out_channels;
  p.col_rows = p.out_per_group * Product(kernel);
  return p;
}

void ConvTransposeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& filter = Input(1);
  const Tensor* bias = InputSize() == 3 ? &Input(2) : nullptr;
  const ConvTransposeProblem p = Resolve(X, filter, bias);
  Tensor* Y = Output(0);
  Y->Resize(p.OutputDims());
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Compute<T>(p, X, filter, bias, Y);
  });
}

template <typename T>
void ConvTransposeOp::Compute(const ConvTransposeProblem& p, const Tensor& X,
                              const Tensor& filter, const Tensor* bias, Tensor* Y) {
  const int64_t image_in = p.input_image_size(), image_out = p.output_image_size();
  const int64_t C = p.in_channels, M = p.out_channels, G = p.group;
  const int64_t Cg = p.in_per_group, Mg = p.out_per_group, R = p.col_rows;
  const T* x = X.data<T>();
  const T* w = filter.data<T>();
  T* y = Y->mutable_data<T>();
  std::fill(y, y + Y->numel(), T(0));
  const bool nchw = p.order == StorageOrder::kNCHW;
  T* col = ScratchBuffer<T>(col_buffer_, R * image_in);
  T* x_group = (!nchw && G > 1) ? ScratchBuffer<T>(group_buffer_, image_in * Cg) : nullptr;
  for (int64_t n = 0; n < p.batch; ++n) {
    const T* xn = x + n * C * image_in;
    T* yn = y + n * M * image_out;
    for (int64_t gi = 0; gi < G; ++gi) {
      const T* wg = w + gi * Cg * R;
      if (nchw) {
        // col [R x Pin] = W_g^T [R x Cg] * X_g [Cg x Pin], then folded onto Y_g.
        blas::Gemm<T>(true, false, R, image_in, Cg, T(1), wg, xn + gi * Cg * image_in, T(0),
                      col);
        Col2ImNdAdd(p.order, p.col, col, yn + gi * Mg * image_out);
      } else {
        const T* xg = xn;
        if (G > 1) {
          GatherGroupChannels(image_in, C, Cg, gi, xn, x_group);
          xg = x_group;
        }
        // col [Pin x R] = X_g [Pin x Cg] * W_g [Cg x R]
        blas::Gemm<T>(false, false, image_in, R, Cg, T(1), xg, wg, T(0), col);
        Col2ImNdAdd(p.order, p.col, col, yn + gi * Mg);
      }
    }
  }
  if (bias != nullptr) AddChannelBias<T>(p.order, p.batch, M, image_out, bias->data<T>(), y);
}

ConvTransposeGradientOp::ConvTransposeGradientOp(const OperatorDef& def, Workspace* workspace)
    : ConvTransposeOpBase(def, workspace), no_bias_(ReadNoBias(*this)) {}

void ConvTransposeGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& filter = Input(1);
  const Tensor& dY = Input(2);
  const ConvTransposeProblem p = Resolve(X, filter, nullptr);
  CheckOutputGradient(*this, X, dY, p.OutputDims(), "the transposed convolution's output");
  const ConvGradientOutputs out = ResizeConvGradientOutputs(
      *this, no_bias_, X, filter, p.out_channels, [this](int i) { return Output(i); });
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Compute<T>(p, X, filter, dY, out.dfilter, out.dbias, out.dX);
  });
}

template <typename T>
void ConvTransposeGradientOp::Compute(const ConvTransposeProblem& p, const Tensor& X,
                                      const Tensor& filter, const Tensor& dY, Tensor* dfilter,
                                      Tensor* dbias, Tensor* dX) {
  const int64_t image_in = p.input_image_size(), image_out = p.output_image_size();
  const int64_t C = p.in_channels, M = p.out_channels, G = p.group;
  const int64_t Cg = p.in_per_group, Mg = p.out_per_group, R = p.col_rows;
  const T* x = X.data<T>();
  const T* w = filter.data<T>();
  const T* dy = dY.data<T>();
  T* dw = dfilter->mutable_data<T>();
  std::fill(dw, dw + dfilter->numel(), T(0));
  T* dx = dX != nullptr ? dX->mutable_data<T>() : nullptr;
  if (dbias != nullptr) {
    SumPerChannel<T>(p.order, p.batch, M, image_out, dy, dbias->mutable_data<T>());
  }
  const bool nchw = p.order == StorageOrder::kNCHW;
  T* col = ScratchBuffer<T>(col_buffer_, R * image_in);
  T* x_group = nullptr;
  T* dx_group = nullptr;
  if (!nchw && G > 1) {
    x_group = ScratchBuffer<T>(group_buffer_, image_in * Cg);
    dx_group = ScratchBuffer<T>(group_out_buffer_, image_in * Cg);
  }
  for (int64_t n = 0; n < p.batch; ++n) {
    const T* xn = x + n * C * image_in;
    const T* dyn = dy + n * M * image_out;
    T* dxn = dx != nullptr ? dx + n * C * image_in : nullptr;
    for (int64_t gi = 0; gi < G; ++gi) {
      const T* wg = w + gi * Cg * R;
      T* dwg = dw + gi * Cg * R;
      if (nchw) {
        // col [R x Pin] gathers the dY windows each input position wrote to.
        Im2ColNd(p.order, p.col, dyn + gi * Mg * image_out, col);
        const T* xg = xn + gi * Cg * image_in;
        // dW_g [Cg x R] += X_g [Cg x Pin] * col^T;  dX_g [Cg x Pin] = W_g * col
        blas::Gemm<T>(false, true, Cg, R, image_in, T(1), xg, col, T(1), dwg);
        if (dxn != nullptr) {
          blas::Gemm<T>(false, false, Cg, image_in, R, T(1), wg, col, T(0),
                        dxn + gi * Cg * image_in);
        }
      } else {
        Im2ColNd(p.order, p.col, dyn + gi * Mg, col);  // [Pin x R]
        const T* xg = xn;
        if (G > 1) {
          GatherGroupChannels(image_in, C, Cg, gi, xn, x_group);
          xg = x_group;
        }
        // dW_g [Cg x R] += X_g^T [Cg x Pin] * col;  dX_g [Pin x Cg] = col * W_g^T
        blas::Gemm<T>(true, false, Cg, R, image_in, T(1), xg, col, T(1), dwg);
        if (dxn == nullptr) continue;
        if (G == 1) {
          blas::Gemm<T>(false, true, image_in, Cg, R, T(1), col, wg, T(0), dxn);
        } else {
          blas::Gemm<T>(false, true, image_in, Cg, R, T(1), col, wg, T(0), dx_group);
          ScatterGroupChannels(image_in, C, Cg, gi, dx_group, dxn);
        }
      }
    }
  }
}

REGISTER_CPU_OPERATOR(ConvTranspose, ConvTransposeOp);
REGISTER_CPU_OPERATOR(ConvTransposeGradient, ConvTransposeGradientOp);

namespace {

std::vector<TensorShape> InferConvTranspose(const OperatorDef& def,
                                            const std::vector<TensorShape>& inputs) {
  std::vector<TensorShape> outputs(def.output_size());
  for (TensorShape& shape : outputs) shape.set_unknown_shape(true);
  if (inputs.size() < 2 || inputs[0].unknown_shape() || inputs[1].unknown_shape()) {
    return outputs;
  }
  const int rank = inputs[0].dims_size();
  if (rank < 3 || rank > 5 || inputs[1].dims_size() != rank) return outputs;
  try {
    const ConvPoolArgs args(def);
    const int num_spatial = rank - 2;
    const bool nchw = args.order() == StorageOrder::kNCHW;
    const auto& x = inputs[0].dims();
    const auto& f = inputs[1].dims();
    const std::vector<int64_t> stride = args.Stride(num_spatial, def.input(0));
    const std::vector<int64_t> dilation = args.Dilation(num_spatial, def.input(0));
    std::vector<int64_t> pads(2 * num_spatial, 0);
    if (args.legacy_pad() == LegacyPadding::kNotSet) pads = args.Pads(num_spatial, def.input(0));
    const std::vector<int64_t> adj =
        ConvTransposeAdj(def).PerAxis(num_spatial, def.type(), def.input(0));
    const int64_t out_channels = (nchw ? f[1] : f[rank - 1]) * args.group();
    TensorShape shape;
    shape.add_dims(x[0]);
    if (nchw) shape.add_dims(out_channels);
    for (int axis = 0; axis < num_spatial; ++axis) {
      const int64_t in = x[axis + (nchw ? 2 : 1)];
      const int64_t kernel = f[axis + (nchw ? 2 : 1)];
      shape.add_dims((in - 1) * stride[axis] + dilation[axis] * (kernel - 1) + 1 + adj[axis] -
                     pads[axis] - pads[num_spatial + axis]);
    }
    if (!nchw) shape.add_dims(out_channels);
    shape.set_data_type(inputs[0].data_type());
    outputs[0] = shape;
  } catch (const Error&) {
    // Unknown; running the op reports the problem.
  }
  return outputs;
}

std::vector<TensorShape> InferConvTransposeGradient(const OperatorDef& def,
                                                    const std::vector<TensorShape>& inputs) {
  if (inputs.size() < 3 || inputs[0].unknown_shape() || inputs[1].unknown_shape() ||
      inputs[2].unknown_shape()) {
    std::vector<TensorShape> outputs(def.output_size());
    for (TensorShape& shape : outputs) shape.set_unknown_shape(true);
    return outputs;
  }
  // M is the channel dim of dY (the filter holds only M / group).
  const TensorShape& dy = inputs[2];
  int64_t bias_channels = -1;
  if (dy.dims_size() >= 3) {
    const bool nchw = ArgumentHelper(def).GetSingle<std::string>("order", "NCHW") == "NCHW";
    bias_channels = nchw ? dy.dims(1) : dy.dims(dy.dims_size() - 1);
  }
  return ConvGradientShapes(def, inputs[0], inputs[1], bias_channels);
}

}  // namespace

OPERATOR_SCHEMA(ConvTranspose).LowPrecisionInFloat32()
    .NumInputs(2, 3)
    .NumOutputs(1)
    .TensorInferenceFunction(InferConvTranspose)
    .CostInferenceFunction(CostInferenceForConvTranspose)
    .Arg("kernel", "(int) kernel size; also 'kernels' or kernel_h/kernel_w. Default: the "
                   "filter's spatial dims")
    .Arg("stride", "(int, default 1) also 'strides' or stride_h/stride_w")
    .Arg("pad", "(int, default 0) cropped from both ends of each output axis; also 'pads' "
                "[begin per axis..., end per axis...] or pad_t/pad_l/pad_b/pad_r")
    .Arg("adj", "(int, default 0) extra output size at the end of each axis (<= stride); also "
                "'adjs' or adj_h/adj_w")
    .Arg("dilation", "(int, default 1) kernel dilation (an extension over Caffe2)")
    .Arg("group", "(int, default 1) channel groups")
    .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
    .Arg("legacy_pad", "(int, default 0) 1 VALID or 2 SAME: no padding")
    .Arg("shared_buffer", "(int, default 0) accepted for compatibility")
    .Input(0, "X", "[N, C, spatial...] (NHWC: [N, spatial..., C]), float32 or float64")
    .Input(1, "filter", "[C, M / group, kernel...] (NHWC: [C, kernel..., M / group])")
    .Input(2, "bias", "optional [M]")
    .Output(0, "Y", "[N, M, output...] with output = (in - 1) * stride + dilation * "
                    "(kernel - 1) + 1 + adj - pad_begin - pad_end")
    .Doc("Transposed convolution: scatters every input value times the filter onto the "
         "(strided) output, crops the pads and adds the bias.");

OPERATOR_SCHEMA(ConvTransposeGradient).LowPrecisionInFloat32()
    .NumInputs(3)
    .NumOutputs(1, 3)
    .TensorInferenceFunction(InferConvTransposeGradient)
    .Arg("no_bias", "(int, default 0) 1 when the forward op had no bias: then output 1 is dX")
    .Input(0, "X", "the forward input")
    .Input(1, "filter", "the forward filter")
    .Input(2, "dY", "gradient of the forward output")
    .Output(0, "dfilter", "gradient of the filter")
    .Output(1, "dbias", "gradient of the bias (or dX when no_bias)")
    .Output(2, "dX", "gradient of X (optional)")
    .Doc("Gradients of ConvTranspose: dfilter, then dbias unless no_bias, then dX if one "
         "more output is given.");

REGISTER_GRADIENT(ConvTranspose, GetConvGradient);
SHOULD_NOT_DO_GRADIENT(ConvTransposeGradient, "ConvTransposeGradient is itself a gradient op");

}  // namespace doppio
