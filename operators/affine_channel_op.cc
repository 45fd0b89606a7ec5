#include "operators/affine_channel_op.h"

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// X as [outer, C, inner] (NCHW: images, channels, pixels; NHWC: rows,
// channels, 1).
struct ChannelView {
  int64_t outer, channels, inner;
};

ChannelView ViewOf(const OperatorBase& op, int x_index, const Tensor& x, StorageOrder order) {
  DOPPIO_ENFORCE(x.ndim() >= 2, "X '", op.input_name(x_index),
                 "' must have rank >= 2 (N, C, ...), not ", x.dims());
  if (order == StorageOrder::kNCHW)
    return {x.dim(0), x.dim(1), x.numel() / std::max<int64_t>(1, x.dim(0) * x.dim(1))};
  const int64_t C = x.dim(x.ndim() - 1);
  return {x.numel() / std::max<int64_t>(1, C), C, 1};
}

void CheckPerChannel(const OperatorBase& op, int index, const Tensor& t, const Tensor& x,
                     int64_t channels) {
  DOPPIO_ENFORCE(t.ndim() == 1 && t.dim(0) == channels && t.dtype() == x.dtype(), "'",
                 op.input_name(index), "' must be [", channels, "] of X's type ",
                 DataTypeName(x.dtype()), ", not ", t.DebugString());
}

// out = in * scale (+ bias) per channel; out may be in.
template <typename T>
void ScaleChannels(const ChannelView& v, const T* in, const T* scale, const T* bias, T* out) {
  ParallelFor(
      v.outer * v.channels,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t c = row % v.channels;
          const T s = scale[c], b = bias != nullptr ? bias[c] : T(0);
          const T* x = in + row * v.inner;
          T* y = out + row * v.inner;
          for (int64_t i = 0; i < v.inner; ++i) y[i] = x[i] * s + b;
        }
      },
      RowsPerThread(v.inner));
}

// dscale[c] = sum dY * X, dbias[c] = sum dY over channel c, in the order of
// X's elements.
template <typename T>
void ChannelSums(const ChannelView& v, const T* dy, const T* x, T* dscale, T* dbias) {
  ParallelFor(
      v.channels,
      [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) dscale[c] = dbias[c] = T(0);
        for (int64_t n = 0; n < v.outer; ++n) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t at = (n * v.channels + c) * v.inner;
            for (int64_t i = 0; i < v.inner; ++i) {
              dscale[c] += dy[at + i] * x[at + i];
              dbias[c] += dy[at + i];
            }
          }
        }
      },
      RowsPerThread(v.outer * v.inner));
}

}  // namespace

AffineChannelOp::AffineChannelOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      order_(ParseStorageOrder(GetSingleArgument<std::string>("order", "NCHW"), def.type())) {}

void AffineChannelOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const ChannelView v = ViewOf(*this, 0, X, order_);
  CheckPerChannel(*this, 1, Input(1), X, v.channels);
  CheckPerChannel(*this, 2, Input(2), X, v.channels);
  Tensor* Y = Output(0);
  if (Y != &X) Y->ResizeLike(X);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ScaleChannels<T>(v, X.data<T>(), Input(1).data<T>(), Input(2).data<T>(),
                     Y->template mutable_data<T>());
  });
}

AffineChannelGradientOp::AffineChannelGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      order_(ParseStorageOrder(GetSingleArgument<std::string>("order", "NCHW"), def.type())),
      is_learnable_(GetSingleArgument<bool>("is_learnable", false)) {
  DOPPIO_ENFORCE(InputSize() == (is_learnable_ ? 3 : 2) && OutputSize() == (is_learnable_ ? 3 : 1),
                 "with is_learnable ", is_learnable_ ? 1 : 0, " the inputs are ",
                 is_learnable_ ? "(dY, X, scale) and the outputs (dX, dscale, dbias)"
                               : "(dY, scale) and the output dX");
}

void AffineChannelGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  const Tensor& scale = Input(is_learnable_ ? 2 : 1);
  const ChannelView v = ViewOf(*this, 0, dY, order_);
  CheckPerChannel(*this, is_learnable_ ? 2 : 1, scale, dY, v.channels);
  if (is_learnable_) {
    DOPPIO_ENFORCE(Input(1).dims() == dY.dims() && Input(1).dtype() == dY.dtype(), "X '",
                   input_name(1), "' ", Input(1).DebugString(), " must match dY ",
                   dY.DebugString());
  }
  DispatchInput(FloatTypes{}, *this, 0, dY.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_learnable_) {  // the sums read dY, which dX may overwrite
      Tensor* dscale = Output(1);
      Tensor* dbias = Output(2);
      dscale->Resize({v.channels});
      dbias->Resize({v.channels});
      ChannelSums<T>(v, dY.data<T>(), Input(1).data<T>(), dscale->template mutable_data<T>(),
                     dbias->template mutable_data<T>());
    }
    Tensor* dX = Output(0);
    if (dX != &dY) dX->ResizeLike(dY);
    ScaleChannels<T>(v, dY.data<T>(), scale.data<T>(), nullptr, dX->template mutable_data<T>());
  });
}

REGISTER_CPU_OPERATOR(AffineChannel, AffineChannelOp);
REGISTER_CPU_OPERATOR(AffineChannelGradient, AffineChannelGradientOp);

namespace {

const char kOrderDoc[] = "(string, default NCHW) NCHW (channels are dim 1) or NHWC (the last dim)";

class GetAffineChannelGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (ArgumentHelper(Def()).GetSingle<bool>("is_learnable", false)) {
      return SingleGradientDef("AffineChannelGradient", "", {GO(0), I(0), I(1)},
                               {GI(0), GI(1), GI(2)}, Def().arg());
    }
    return SingleGradientDef("AffineChannelGradient", "", {GO(0), I(1)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

OPERATOR_SCHEMA(AffineChannel)
    .NumInputs(3)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("order", kOrderDoc)
    .Arg("is_learnable", "(bool, default false) whether scale and bias get gradients")
    .Input(0, "X", "[N, C, ...] (NHWC: [N, ..., C]), float32 or float64")
    .Input(1, "scale", "[C]")
    .Input(2, "bias", "[C]")
    .Output(0, "Y", "X * scale + bias per channel; may be X")
    .Doc("A fixed affine transform per channel (Detectron's stand-in for a frozen SpatialBN).");

OPERATOR_SCHEMA(AffineChannelGradient)
    .NumInputs(2, 3)
    .NumOutputs(1, 3)
    .AllowInplace({{0, 0}})
    .Arg("order", kOrderDoc)
    .Arg("is_learnable", "as AffineChannel's: 1 takes (dY, X, scale) and gives (dX, dscale, dbias)")
    .Input(0, "dY", "gradient of Y")
    .Input(1, "X or scale", "is_learnable: AffineChannel's X; else its scale")
    .Input(2, "scale", "is_learnable: AffineChannel's scale")
    .Output(0, "dX", "dY * scale per channel; may be dY")
    .Output(1, "dscale", "is_learnable: sum of dY * X per channel")
    .Output(2, "dbias", "is_learnable: sum of dY per channel")
    .Doc("Gradient of AffineChannel.");

REGISTER_GRADIENT(AffineChannel, GetAffineChannelGradient);
SHOULD_NOT_DO_GRADIENT(AffineChannelGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
