#include "operators/resize_op.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// Output sides past this would overflow Caffe2's int arithmetic: refused.
constexpr float kMaxSide = 2147483647.0f;

struct ResizeShape {
  int64_t batch, channels, in_h, in_w, out_h, out_w;
  bool nchw;
};

void CheckScale(float scale, const char* name) {
  DOPPIO_ENFORCE(std::isfinite(scale) && scale > 0, name, " (", scale,
                 ") must be a positive number");
}

// The scales: the arguments, or the input `scales` (float32 [2]: height,
// width, named `name`) when the op has it.
std::pair<float, float> ReadScales(const Tensor* scales, const std::string& name, float height,
                                   float width) {
  if (scales != nullptr) {
    DOPPIO_ENFORCE(scales->dtype() == DataType::kFloat && scales->numel() == 2, "scales '", name,
                   "' must be float32 [2] (height_scale, width_scale), not ",
                   scales->DebugString());
    height = scales->data<float>()[0];
    width = scales->data<float>()[1];
  }
  CheckScale(height, "height_scale");
  CheckScale(width, "width_scale");
  return {height, width};
}

int64_t ScaledSide(int64_t side, float scale, const char* name) {
  const float scaled = static_cast<float>(side) * scale;
  DOPPIO_ENFORCE(scaled < kMaxSide, "the output's ", name, " (", side, " x ", scale,
                 ") is out of range");
  return static_cast<int64_t>(scaled);
}

ResizeShape ShapeOf(const OperatorBase& op, int x_index, const Tensor& x, StorageOrder order,
                    std::pair<float, float> scales) {
  DOPPIO_ENFORCE(x.ndim() == 4, "X '", op.input_name(x_index), "' must be 4-D (",
                 StorageOrderName(order), "), not ", x.dims());
  const bool nchw = order == StorageOrder::kNCHW;
  ResizeShape s{x.dim(0), x.dim(nchw ? 1 : 3), x.dim(nchw ? 2 : 1), x.dim(nchw ? 3 : 2), 0, 0,
                nchw};
  s.out_h = ScaledSide(s.in_h, scales.first, "height");
  s.out_w = ScaledSide(s.in_w, scales.second, "width");
  return s;
}

std::vector<int64_t> OutputDims(const ResizeShape& s) {
  if (s.nchw) return {s.batch, s.channels, s.out_h, s.out_w};
  return {s.batch, s.out_h, s.out_w, s.channels};
}

// The input row (or column) each output row (column) copies: Caffe2's
// min(int(i / scale), in - 1), the quotient in float32.
std::vector<int64_t> SourceOf(int64_t out, int64_t in, float scale) {
  std::vector<int64_t> source(out);
  for (int64_t i = 0; i < out; ++i) {
    const float q = static_cast<float>(i) / scale;
    source[i] = std::min<int64_t>(static_cast<int64_t>(q), in - 1);
  }
  return source;
}

// The input rows and columns the output's copy.
struct Sources {
  std::vector<int64_t> rows, cols;
};

Sources SourcesOf(const ResizeShape& s, std::pair<float, float> scales) {
  return {SourceOf(s.out_h, s.in_h, scales.first), SourceOf(s.out_w, s.in_w, scales.second)};
}

template <typename T>
void Upsample(const ResizeShape& s, const Sources& sources, const T* x, T* y) {
  const std::vector<int64_t>& rows = sources.rows;
  const std::vector<int64_t>& cols = sources.cols;
  if (s.nchw) {
    // Rows of all planes: (plane, output row).
    ParallelFor(
        s.batch * s.channels * s.out_h,
        [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const int64_t plane = row / s.out_h;
            const T* in = x + (plane * s.in_h + rows[row % s.out_h]) * s.in_w;
            T* out = y + row * s.out_w;
            for (int64_t c = 0; c < s.out_w; ++c) out[c] = in[cols[c]];
          }
        },
        RowsPerThread(s.out_w));
    return;
  }
  ParallelFor(
      s.batch * s.out_h,
      [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t n = row / s.out_h;
          const T* in = x + (n * s.in_h + rows[row % s.out_h]) * s.in_w * s.channels;
          T* out = y + row * s.out_w * s.channels;
          for (int64_t c = 0; c < s.out_w; ++c) {
            std::memcpy(out + c * s.channels, in + cols[c] * s.channels, sizeof(T) * s.channels);
          }
        }
      },
      RowsPerThread(s.out_w * s.channels));
}

// dX[source pixel] += dY[pixel], each dX value summing in output order.
template <typename T>
void Downsum(const ResizeShape& s, const Sources& sources, const T* dy, T* dx) {
  const std::vector<int64_t>& rows = sources.rows;
  const std::vector<int64_t>& cols = sources.cols;
  const int64_t out_image = s.out_h * s.out_w, in_image = s.in_h * s.in_w;
  if (s.nchw) {
    ParallelFor(
        s.batch * s.channels,
        [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) {
            const T* g = dy + plane * out_image;
            T* d = dx + plane * in_image;
            for (int64_t y = 0; y < s.out_h; ++y) {
              for (int64_t x = 0; x < s.out_w; ++x)
                d[rows[y] * s.in_w + cols[x]] += g[y * s.out_w + x];
            }
          }
        },
        RowsPerThread(out_image));
    return;
  }
  ParallelFor(
      s.channels,
      [&](int64_t c0, int64_t c1) {
        for (int64_t n = 0; n < s.batch; ++n) {
          for (int64_t y = 0; y < s.out_h; ++y) {
            for (int64_t x = 0; x < s.out_w; ++x) {
              const T* g = dy + ((n * s.out_h + y) * s.out_w + x) * s.channels;
              T* d = dx + ((n * s.in_h + rows[y]) * s.in_w + cols[x]) * s.channels;
              for (int64_t c = c0; c < c1; ++c) d[c] += g[c];
            }
          }
        }
      },
      RowsPerThread(s.batch * out_image));
}

}  // namespace

ResizeNearestOp::ResizeNearestOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      order_(ParseStorageOrder(GetSingleArgument<std::string>("order", "NCHW"), def.type())),
      height_scale_(GetSingleArgument<float>("height_scale", 1.0f)),
      width_scale_(GetSingleArgument<float>("width_scale", 1.0f)) {}

void ResizeNearestOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::pair<float, float> scales =
      ReadScales(InputSize() == 2 ? &Input(1) : nullptr, InputSize() == 2 ? input_name(1) : "",
                 height_scale_, width_scale_);
  const ResizeShape s = ShapeOf(*this, 0, X, order_, scales);
  Tensor* Y = Output(0);
  Y->Resize(OutputDims(s));
  const Sources sources = SourcesOf(s, scales);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Upsample<T>(s, sources, X.data<T>(), Y->template mutable_data<T>());
  });
}

ResizeNearestGradientOp::ResizeNearestGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      order_(ParseStorageOrder(GetSingleArgument<std::string>("order", "NCHW"), def.type())),
      height_scale_(GetSingleArgument<float>("height_scale", 1.0f)),
      width_scale_(GetSingleArgument<float>("width_scale", 1.0f)) {}

void ResizeNearestGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  const Tensor& X = Input(1);
  const std::pair<float, float> scales =
      ReadScales(InputSize() == 3 ? &Input(2) : nullptr, InputSize() == 3 ? input_name(2) : "",
                 height_scale_, width_scale_);
  const ResizeShape s = ShapeOf(*this, 1, X, order_, scales);
  const std::vector<int64_t> y_dims = OutputDims(s);
  DOPPIO_ENFORCE(dY.dims() == y_dims && dY.dtype() == X.dtype(), "dY '", input_name(0), "' (",
                 dY.dims(), ", ", DataTypeName(dY.dtype()),
                 ") must have ResizeNearest's output shape ", y_dims, " and X's type");
  Tensor* dX = Output(0);
  dX->ResizeLike(X);
  const Sources sources = SourcesOf(s, scales);
  DispatchInput(FloatTypes{}, *this, 1, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dx = dX->template mutable_data<T>();
    std::fill(dx, dx + dX->numel(), T(0));
    Downsum<T>(s, sources, dY.data<T>(), dx);
  });
}

namespace {

int64_t ReadIntegerScale(const OperatorBase& op) {
  const int64_t scale = op.GetSingleArgument<int64_t>("scale", 2);
  DOPPIO_ENFORCE(scale >= 1 && scale <= 4096, "scale ", scale,
                 " must be an integer from 1 to 4096");
  return scale;
}

// ResizeNearest's NCHW shape for UpsampleNearest's X (input `index`).
ResizeShape UpsampleShape(const OperatorBase& op, int index, const Tensor& x, int64_t scale) {
  DOPPIO_ENFORCE(x.ndim() == 4, "X '", op.input_name(index), "' must be 4-D (NCHW), not ",
                 x.dims());
  return {x.dim(0), x.dim(1), x.dim(2), x.dim(3), x.dim(2) * scale, x.dim(3) * scale, true};
}

}  // namespace

UpsampleNearestOp::UpsampleNearestOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), scale_(ReadIntegerScale(*this)) {}

void UpsampleNearestOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const ResizeShape s = UpsampleShape(*this, 0, X, scale_);
  Tensor* Y = Output(0);
  Y->Resize(OutputDims(s));
  const float scale = static_cast<float>(scale_);
  const Sources sources = SourcesOf(s, {scale, scale});
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Upsample<T>(s, sources, X.data<T>(), Y->template mutable_data<T>());
  });
}

UpsampleNearestGradientOp::UpsampleNearestGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), scale_(ReadIntegerScale(*this)) {}

void UpsampleNearestGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& dY = Input(1);
  const ResizeShape s = UpsampleShape(*this, 0, X, scale_);
  DOPPIO_ENFORCE(dY.dims() == OutputDims(s) && dY.dtype() == X.dtype(), "dY '", input_name(1), "' ",
                 dY.DebugString(), " must have UpsampleNearest's output shape ", OutputDims(s),
                 " and X's type");
  Tensor* dX = Output(0);
  dX->ResizeLike(X);
  const float scale = static_cast<float>(scale_);
  const Sources sources = SourcesOf(s, {scale, scale});
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dx = dX->template mutable_data<T>();
    std::fill(dx, dx + dX->numel(), T(0));
    Downsum<T>(s, sources, dY.data<T>(), dx);
  });
}

REGISTER_CPU_OPERATOR(ResizeNearest, ResizeNearestOp);
REGISTER_CPU_OPERATOR(ResizeNearestGradient, ResizeNearestGradientOp);

namespace {

std::vector<TensorShape> ResizeNearestInference(const OperatorDef& def,
                                                const std::vector<TensorShape>& in) {
  DOPPIO_ENFORCE(def.input_size() == 1, "the output's shape depends on the scales input's values");
  const ArgumentHelper args(def);
  const bool nchw = ParseStorageOrder(args.GetSingle<std::string>("order", "NCHW"), def.type()) ==
                    StorageOrder::kNCHW;
  DOPPIO_ENFORCE(in.at(0).dims_size() == 4, "ResizeNearest needs a 4-D X");
  TensorShape out = in[0];
  const int h = nchw ? 2 : 1;
  out.set_dims(h, ScaledSide(in[0].dims(h), args.GetSingle<float>("height_scale", 1.0f), "height"));
  out.set_dims(h + 1,
               ScaledSide(in[0].dims(h + 1), args.GetSingle<float>("width_scale", 1.0f), "width"));
  return {out};
}

const char kOrderDoc[] = "(string, default NCHW) NCHW or NHWC";

class GetResizeNearestGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs{GO(0), I(0)};
    if (Def().input_size() == 2) inputs.push_back(I(1));
    return SingleGradientDef("ResizeNearestGradient", "", inputs, {GI(0)}, Def().arg());
  }
};

}  // namespace

OPERATOR_SCHEMA(ResizeNearest)
    .NumInputs(1, 2)
    .NumOutputs(1)
    .TensorInferenceFunction(ResizeNearestInference)
    .Arg("height_scale", "(float, default 1) output height = int(H * height_scale)")
    .Arg("width_scale", "(float, default 1) output width = int(W * width_scale)")
    .Arg("order", kOrderDoc)
    .Input(0, "X", "[N, C, H, W] (NHWC: [N, H, W, C]), float32 or float64")
    .Input(1, "scales", "optional float32 [2]: height_scale, width_scale (replace the arguments)")
    .Output(0, "Y", "X resized by nearest neighbour")
    .Doc(
        "Nearest-neighbour resize of the spatial dims: Y[y, x] = X[min(int(y / height_scale), "
        "H - 1), min(int(x / width_scale), W - 1)].");

OPERATOR_SCHEMA(ResizeNearestGradient)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .Arg("height_scale", "as ResizeNearest's")
    .Arg("width_scale", "as ResizeNearest's")
    .Arg("order", kOrderDoc)
    .Input(0, "dY", "gradient of Y")
    .Input(1, "X", "ResizeNearest's X (its shape)")
    .Input(2, "scales", "ResizeNearest's scales, when it had them")
    .Output(0, "dX", "each X pixel's sum of the dY pixels that copied it")
    .Doc("Gradient of ResizeNearest with respect to X (the scales get none).");

OPERATOR_SCHEMA(UpsampleNearest)
    .NumInputs(1)
    .NumOutputs(1)
    .Arg("scale", "(int, default 2) the integer upsampling factor of both sides")
    .Input(0, "X", "[N, C, H, W], float32 or float64")
    .Output(0, "Y", "[N, C, scale H, scale W]: Y[y, x] = X[y / scale, x / scale]")
    .Doc("Detectron's nearest-neighbour upsampling by an integer factor.");

OPERATOR_SCHEMA(UpsampleNearestGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .Arg("scale", "as UpsampleNearest's")
    .Input(0, "X", "UpsampleNearest's X")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "each X pixel's sum over its scale x scale copies")
    .Doc("Gradient of UpsampleNearest.");

REGISTER_CPU_OPERATOR(UpsampleNearest, UpsampleNearestOp);
REGISTER_CPU_OPERATOR(UpsampleNearestGradient, UpsampleNearestGradientOp);

namespace {

class GetUpsampleNearestGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("UpsampleNearestGradient", "", {I(0), GO(0)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(UpsampleNearest, GetUpsampleNearestGradient);
SHOULD_NOT_DO_GRADIENT(UpsampleNearestGradient,
                       "it is a gradient op; second derivatives are not supported");
REGISTER_GRADIENT(ResizeNearest, GetResizeNearestGradient);
SHOULD_NOT_DO_GRADIENT(ResizeNearestGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
