#include "operators/tile_op.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

// One integer from input `index` (a one-element int32/int64 tensor), or the
// argument `name`, which Caffe2 requires when the input is absent.
int64_t TileParameter(const Operator<CPUContext>& op, int index, const std::string& name) {
  if (op.InputSize() > index) {
    const Blob& blob = op.InputBlob(index);
    DOPPIO_ENFORCE(blob.IsTensor(), "input '", op.input_name(index), "' must be a tensor");
    const Tensor& t = blob.GetTensor();
    DOPPIO_ENFORCE(t.ndim() == 1 && t.numel() == 1 &&
                       (t.dtype() == DataType::kInt32 || t.dtype() == DataType::kInt64),
                   "input `", name, "` ('", op.input_name(index),
                   "') must be a vector of one integer, not ", t.DebugString());
    return t.dtype() == DataType::kInt32 ? t.data<int32_t>()[0] : t.data<int64_t>()[0];
  }
  DOPPIO_ENFORCE(op.HasArgument(name), "argument `", name,
                 "` is missing and was not given as an input");
  return op.GetSingleArgument<int64_t>(name, 0);
}

struct TileShape {
  int axis;
  int64_t tiles, outer, inner;
};

// tiles / axis for the tensor of `dims` (the op's input, or its gradient's
// output, whose dim `axis` is `tiles` times smaller).
TileShape ReadTileShape(const Operator<CPUContext>& op, const Tensor& reference) {
  TileShape s;
  s.tiles = TileParameter(op, 1, "tiles");
  DOPPIO_ENFORCE(s.tiles >= 0, "tiles must not be negative, got ", s.tiles);
  s.axis = reference.CanonicalAxis(static_cast<int>(TileParameter(op, 2, "axis")));
  s.outer = reference.SizeToDim(s.axis);
  return s;
}

}  // namespace

void TileOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.ndim() >= 1, "X '", input_name(0), "' must have at least one dim");
  TileShape s = ReadTileShape(*this, X);
  s.inner = X.SizeFromDim(s.axis);
  std::vector<int64_t> dims = X.dims();
  dims[s.axis] *= s.tiles;
  Tensor* Y = Output(0);
  Y->Resize(dims);
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = Y->mutable_data<T>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t t = 0; t < s.tiles; ++t) {
        y = std::copy(x + o * s.inner, x + (o + 1) * s.inner, y);
      }
    }
  });
}

void TileGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  DOPPIO_ENFORCE(dY.dtype() == DataType::kFloat && dY.ndim() >= 1, "dY '", input_name(0),
                 "' must be a float32 tensor with at least one dim");
  TileShape s = ReadTileShape(*this, dY);
  DOPPIO_ENFORCE(s.tiles > 0 && dY.dim(s.axis) % s.tiles == 0, "dY '", input_name(0), "' ",
                 dY.dims(), " does not hold ", s.tiles, " tiles along axis ", s.axis);
  std::vector<int64_t> dims = dY.dims();
  dims[s.axis] /= s.tiles;
  Tensor* dX = Output(0);
  dX->Resize(dims);
  s.inner = dX->SizeFromDim(s.axis);
  const float* dy = dY.data<float>();
  float* dx = dX->mutable_data<float>();
  std::fill(dx, dx + dX->numel(), 0.0f);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t t = 0; t < s.tiles; ++t) {
      const float* slab = dy + (o * s.tiles + t) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) dx[o * s.inner + i] += slab[i];
    }
  }
}

REGISTER_CPU_OPERATOR(Tile, TileOp);
REGISTER_CPU_OPERATOR(TileGradient, TileGradientOp);

OPERATOR_SCHEMA(Tile)
    .NumInputs(1, 3)
    .NumOutputs(1)
    .Arg("tiles", "int: the number of copies (required unless given as input 1)")
    .Arg("axis", "int: the axis to repeat along (required unless given as input 2)")
    .Input(0, "data", "the tensor to tile")
    .Input(1, "tiles", "(optional) [1] int: overrides the argument")
    .Input(2, "axis", "(optional) [1] int: overrides the argument")
    .Output(0, "tiled_data", "data with dim `axis` repeated `tiles` times")
    .Doc("Copies a tensor `tiles` times along `axis`.");

OPERATOR_SCHEMA(TileGradient)
    .NumInputs(1, 3)
    .NumOutputs(1)
    .Input(0, "dY", "gradient of Tile's output")
    .Output(0, "dX", "the sum of dY's copies")
    .Doc("Gradient of Tile.");

namespace {

class GetTileGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return true; }
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs{GO(0)};
    for (int i = 1; i < Def().input_size(); ++i) inputs.push_back(I(i));
    return SingleGradientDef("TileGradient", "", inputs, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(Tile, GetTileGradient);
SHOULD_NOT_DO_GRADIENT(TileGradient, "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
