// ConvGradient (and Conv1D/2D/3DGradient): the filter, bias and input
// gradients of Conv.
#include <algorithm>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/blas.h"
#include "operators/conv_op.h"
#include "operators/conv_op_dnnl.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

ConvGradientOp::ConvGradientOp(const OperatorDef& def, Workspace* workspace)
    : ConvOpBase(def, workspace), no_bias_(ReadNoBias(*this)) {}

ConvGradientOp::~ConvGradientOp() = default;

void ConvGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& filter = Input(1);
  const Tensor& dY = Input(2);
  const ConvProblem p = ResolveConv(X, filter, nullptr);
  CheckOutputGradient(*this, X, dY, p.geometry.OutputDims(p.out_channels),
                      "the convolution's output");
  const ConvGradientOutputs out = ResizeConvGradientOutputs(
      *this, no_bias_, X, filter, p.out_channels, [this](int i) { return Output(i); });
  if (X.dtype() == DataType::kFloat && !force_im2col() && X.numel() > 0 && dY.numel() > 0) {
    if (dnnl_ == nullptr) dnnl_ = std::make_unique<DnnlConvBackward>();
    if (dnnl_->Run(p, X.data<float>(), filter.data<float>(), dY.data<float>(),
                   out.dfilter->mutable_data<float>(),
                   out.dbias != nullptr ? out.dbias->mutable_data<float>() : nullptr,
                   out.dX != nullptr ? out.dX->mutable_data<float>() : nullptr, conv_algorithm())) {
      return;
    }
  }
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunIm2Col<T>(p, X, filter, dY, out.dfilter, out.dbias, out.dX);
  });
}

template <typename T>
void ConvGradientOp::RunIm2Col(const ConvProblem& p, const Tensor& X, const Tensor& filter,
                               const Tensor& dY, Tensor* dfilter, Tensor* dbias, Tensor* dX) {
  const ConvPoolGeometry& g = p.geometry;
  const int64_t image_in = g.input_image_size();
  const int64_t image_out = g.output_image_size();
  const int64_t C = g.channels, M = p.out_channels, G = p.group;
  const int64_t Cg = p.in_per_group, Mg = p.out_per_group, K = p.kernel_dim;
  const T* x = X.data<T>();
  const T* w = filter.data<T>();
  const T* dy = dY.data<T>();
  T* dw = dfilter->mutable_data<T>();
  std::fill(dw, dw + dfilter->numel(), T(0));
  T* dx = nullptr;
  if (dX != nullptr) {
    dx = dX->mutable_data<T>();
    std::fill(dx, dx + dX->numel(), T(0));
  }
  if (dbias != nullptr) {
    SumPerChannel<T>(g.order, g.batch, M, image_out, dy, dbias->mutable_data<T>());
  }
  if (image_out == 0 || g.batch == 0) return;

  const bool nchw = g.order == StorageOrder::kNCHW;
  const bool identity = p.col.IsIdentity() && (nchw || G == 1);
  T* col = ScratchBuffer<T>(col_buffer_, K * image_out);
  T* dy_group = (!nchw && G > 1) ? ScratchBuffer<T>(group_buffer_, image_out * Mg) : nullptr;
  for (int64_t n = 0; n < g.batch; ++n) {
    const T* xn = x + n * C * image_in;
    const T* dyn = dy + n * M * image_out;
    T* dxn = dx != nullptr ? dx + n * C * image_in : nullptr;
    if (nchw) {
      for (int64_t gi = 0; gi < G; ++gi) {
        const T* xg = xn + gi * Cg * image_in;
        const T* dyg = dyn + gi * Mg * image_out;
        const T* wg = w + gi * Mg * K;
        if (!identity) Im2ColNd(g.order, p.col, xg, col);
        // dW_g [Mg x K] += dY_g [Mg x P] * col^T
        blas::Gemm<T>(false, true, Mg, K, image_out, T(1), dyg, identity ? xg : col, T(1),
                      dw + gi * Mg * K);
        if (dxn == nullptr) continue;
        T* dxg = dxn + gi * Cg * image_in;
        if (identity) {
          blas::Gemm<T>(true, false, K, image_out, Mg, T(1), wg, dyg, T(0), dxg);
        } else {
          // dcol [K x P] = W_g^T * dY_g, folded back onto the image.
          blas::Gemm<T>(true, false, K, image_out, Mg, T(1), wg, dyg, T(0), col);
          Col2ImNdAdd(g.order, p.col, col, dxg);
        }
      }
    } else if (G == 1) {
      if (!identity) Im2ColNd(g.order, p.col, xn, col);
      // dW [M x K] += dY^T [M x P] * col [P x K]
      blas::Gemm<T>(true, false, M, K, image_out, T(1), dyn, identity ? xn : col, T(1), dw);
      if (dxn == nullptr) continue;
      if (identity) {
        blas::Gemm<T>(false, false, image_out, K, M, T(1), dyn, w, T(0), dxn);
      } else {
        blas::Gemm<T>(false, false, image_out, K, M, T(1), dyn, w, T(0), col);
        Col2ImNdAdd(g.order, p.col, col, dxn);
      }
    } else {
      for (int64_t gi = 0; gi < G; ++gi) {
        // This group's slice of dY, made contiguous: [P x Mg].
        GatherGroupChannels(image_out, M, Mg, gi, dyn, dy_group);
        const T* wg = w + gi * Mg * K;
        Im2ColNd(g.order, p.col, xn + gi * Cg, col);
        blas::Gemm<T>(true, false, Mg, K, image_out, T(1), dy_group, col, T(1),
                      dw + gi * Mg * K);
        if (dxn == nullptr) continue;
        blas::Gemm<T>(false, false, image_out, K, Mg, T(1), dy_group, wg, T(0), col);
        Col2ImNdAdd(g.order, p.col, col, dxn + gi * Cg);
      }
    }
  }
}

REGISTER_CPU_OPERATOR(ConvGradient, ConvGradientOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvGradient, IM2COL, ConvGradientOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvGradient, DNNL, ConvGradientOp);
REGISTER_CPU_OPERATOR(Conv1DGradient, ConvGradientOp);
REGISTER_CPU_OPERATOR(Conv2DGradient, ConvGradientOp);
REGISTER_CPU_OPERATOR(Conv3DGradient, ConvGradientOp);

namespace {

// dfilter has the filter's shape, dbias [M], dX the input's shape.
std::vector<TensorShape> InferConvGradient(const OperatorDef& def,
                                           const std::vector<TensorShape>& inputs) {
  if (inputs.size() < 3 || inputs[0].unknown_shape() || inputs[1].unknown_shape() ||
      inputs[1].dims_size() == 0) {
    std::vector<TensorShape> outputs(def.output_size());
    for (TensorShape& shape : outputs) shape.set_unknown_shape(true);
    return outputs;
  }
  return ConvGradientShapes(def, inputs[0], inputs[1], /*bias_channels=*/inputs[1].dims(0));
}

void ConvGradientSchemaCommon(OpSchema& schema) {
  schema.NumInputs(3)
      .NumOutputs(1, 3)
      .Arg("no_bias",
           "(int, default 0) 1 when the forward Conv had no bias: then output 1 "
           "is dX")
      .Arg("kernel", "as for Conv (and stride, pad, dilation, group, order, legacy_pad)")
      .Arg("conv_algorithm", "as for Conv: the forward's, which the gradient maker copies")
      .Input(0, "X", "the forward input")
      .Input(1, "filter", "the forward filter")
      .Input(2, "dY", "gradient of the forward output")
      .Output(0, "dfilter", "gradient of the filter")
      .Output(1, "dbias", "gradient of the bias (or dX when no_bias)")
      .Output(2, "dX", "gradient of X (optional)")
      .Doc(
          "Gradients of Conv: dfilter, then dbias unless no_bias, then dX if one more "
          "output is given.");
}

}  // namespace

OPERATOR_SCHEMA(ConvGradient).LowPrecisionInFloat32()
    .Apply(ConvGradientSchemaCommon)
    .TensorInferenceFunction(InferConvGradient)
    .CostInferenceFunction(CostInferenceForConvGradient);
OPERATOR_SCHEMA(Conv1DGradient).Apply(ConvGradientSchemaCommon);
OPERATOR_SCHEMA(Conv2DGradient).Apply(ConvGradientSchemaCommon);
OPERATOR_SCHEMA(Conv3DGradient).Apply(ConvGradientSchemaCommon);

SHOULD_NOT_DO_GRADIENT(ConvGradient, "ConvGradient is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(Conv1DGradient, "Conv1DGradient is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(Conv2DGradient, "Conv2DGradient is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(Conv3DGradient, "Conv3DGradient is itself a gradient op");

}  // namespace doppio
