#include "operators/spatial_narrow_as_op.h"

#include <cstring>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {
namespace {

// The narrowed shape: A's dims with B's last two.
std::vector<int64_t> NarrowedDims(const OperatorBase& op, const Tensor& a, const Tensor& b) {
  const bool shaped = (a.ndim() == 3 || a.ndim() == 4) &&
                      (b.ndim() == a.ndim() || b.ndim() == a.ndim() - 1) && b.ndim() >= 3;
  DOPPIO_ENFORCE(shaped, "A '", op.input_name(0), "' ", a.dims(), " must be 3-D or 4-D and B '",
                 op.input_name(1), "' ", b.dims(), " of its rank or one less (N, H, W)");
  std::vector<int64_t> dims = a.dims();
  const int n = a.ndim();
  DOPPIO_ENFORCE(b.dim(0) == a.dim(0) && (b.ndim() != n || n != 4 || b.dim(1) == a.dim(1)), "B '",
                 op.input_name(1), "' ", b.dims(), " must match A ", a.dims(), " in N (and C)");
  const int64_t height = b.dim(b.ndim() - 2), width = b.dim(b.ndim() - 1);
  DOPPIO_ENFORCE(height <= a.dim(n - 2) && width <= a.dim(n - 1), "B '", op.input_name(1), "' is ",
                 height, " x ", width, ", larger than A's ", a.dim(n - 2), " x ", a.dim(n - 1));
  dims[n - 2] = height;
  dims[n - 1] = width;
  return dims;
}

// Copies the top-left `rows` x `cols` of each plane of `from` (planes of
// from_rows x from_cols) into `to` (planes of to_rows x to_cols), either way.
void CopyPlanes(int64_t planes, int64_t rows, int64_t cols, const char* from, int64_t from_cols,
                int64_t from_rows, char* to, int64_t to_cols, int64_t to_rows, size_t item) {
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(to + ((p * to_rows + r) * to_cols) * item,
                  from + ((p * from_rows + r) * from_cols) * item, cols * item);
    }
  }
}

}  // namespace

void SpatialNarrowAsOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const std::vector<int64_t> dims = NarrowedDims(*this, A, Input(1));
  Tensor* C = Output(0);
  DispatchInput(NumericTypes{}, *this, 0, A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    C->Resize(dims);
    const int n = A.ndim();
    const int64_t planes = A.numel() / std::max<int64_t>(1, A.dim(n - 2) * A.dim(n - 1));
    CopyPlanes(planes, dims[n - 2], dims[n - 1], reinterpret_cast<const char*>(A.data<T>()),
               A.dim(n - 1), A.dim(n - 2), reinterpret_cast<char*>(C->template mutable_data<T>()),
               dims[n - 1], dims[n - 2], sizeof(T));
  });
}

void SpatialNarrowAsGradientOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& dC = Input(2);
  const std::vector<int64_t> dims = NarrowedDims(*this, A, Input(1));
  DOPPIO_ENFORCE(dC.dims() == dims && dC.dtype() == A.dtype(), "dC '", input_name(2), "' ",
                 dC.DebugString(), " must have SpatialNarrowAs's output shape ", dims,
                 " and A's type");
  Tensor* dA = Output(0);
  dA->ResizeLike(A);
  DispatchInput(FloatTypes{}, *this, 0, A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* da = dA->template mutable_data<T>();
    std::fill(da, da + dA->numel(), T(0));
    const int n = A.ndim();
    const int64_t planes = A.numel() / std::max<int64_t>(1, A.dim(n - 2) * A.dim(n - 1));
    CopyPlanes(planes, dims[n - 2], dims[n - 1], reinterpret_cast<const char*>(dC.data<T>()),
               dims[n - 1], dims[n - 2], reinterpret_cast<char*>(da), A.dim(n - 1), A.dim(n - 2),
               sizeof(T));
  });
}

REGISTER_CPU_OPERATOR(SpatialNarrowAs, SpatialNarrowAsOp);
REGISTER_CPU_OPERATOR(SpatialNarrowAsGradient, SpatialNarrowAsGradientOp);

namespace {

class GetSpatialNarrowAsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SpatialNarrowAsGradient", "", {I(0), I(1), GO(0)}, {GI(0)});
  }
};

}  // namespace

OPERATOR_SCHEMA(SpatialNarrowAs)
    .NumInputs(2)
    .NumOutputs(1)
    .Input(0, "A", "[N, C, H0, W0] or [N, H0, W0]; float32, float64, int32 or int64")
    .Input(1, "B", "[N, C, H1, W1] or [N, H1, W1] with H1 <= H0, W1 <= W0 (only its shape)")
    .Output(0, "C", "A's rows [0, H1) and columns [0, W1)")
    .Doc(
        "Narrows A's spatial extent to B's by dropping rows at the bottom and columns at the "
        "right (Detectron's FPN).");

OPERATOR_SCHEMA(SpatialNarrowAsGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .Input(0, "A", "SpatialNarrowAs's A")
    .Input(1, "B", "SpatialNarrowAs's B")
    .Input(2, "dC", "gradient of C")
    .Output(0, "dA", "dC at the top left, zeros elsewhere")
    .Doc("Gradient of SpatialNarrowAs with respect to A (B gets none).");

REGISTER_GRADIENT(SpatialNarrowAs, GetSpatialNarrowAsGradient);
SHOULD_NOT_DO_GRADIENT(SpatialNarrowAsGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
