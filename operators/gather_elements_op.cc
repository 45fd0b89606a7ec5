#include "operators/gather_elements_op.h"

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"

namespace doppio {
namespace {

// For each element of INDICES (in order), the offset in DATA it reads:
// its own coordinates, with the axis coordinate replaced by its index.
template <typename Index>
std::vector<int64_t> SourceOffsets(const OperatorBase& op, const Tensor& data,
                                   const Tensor& indices, int axis) {
  const int rank = data.ndim();
  DOPPIO_ENFORCE(indices.ndim() == rank, "INDICES '", op.input_name(1), "' ", indices.dims(),
                 " must have DATA's rank (", data.dims(), ")");
  const int a = axis < 0 ? axis + rank : axis;
  DOPPIO_ENFORCE(a >= 0 && a < rank, "axis ", axis, " is out of range for rank ", rank);
  for (int d = 0; d < rank; ++d) {
    DOPPIO_ENFORCE(d == a || indices.dim(d) <= data.dim(d), "INDICES '", op.input_name(1), "' ",
                   indices.dims(), " is larger than DATA ", data.dims(), " in dim ", d);
  }
  std::vector<int64_t> stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * data.dim(d + 1);
  std::vector<int64_t> coords(rank, 0), offsets(indices.numel());
  const Index* index = indices.data<Index>();
  const int64_t bound = data.dim(a);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t value = static_cast<int64_t>(index[i]);
    DOPPIO_ENFORCE(value >= -bound && value < bound, "index ", value, " at position ", i, " of '",
                   op.input_name(1), "' is out of range [", -bound, ", ", bound, ") of axis ", a);
    if (value < 0) value += bound;
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset += (d == a ? value : coords[d]) * stride[d];
    offsets[i] = offset;
    for (int d = rank - 1; d >= 0 && ++coords[d] == indices.dim(d); --d) coords[d] = 0;
  }
  return offsets;
}

std::vector<int64_t> ReadOffsets(const OperatorBase& op, const Tensor& data, const Tensor& indices,
                                 int axis) {
  std::vector<int64_t> offsets;
  DispatchInput(IndexTypes{}, op, 1, indices.dtype(), [&](auto tag) {
    using Index = typename decltype(tag)::type;
    offsets = SourceOffsets<Index>(op, data, indices, axis);
  });
  return offsets;
}

}  // namespace

GatherElementsOp::GatherElementsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 0)) {}

void GatherElementsOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& indices = Input(1);
  const std::vector<int64_t> offsets = ReadOffsets(*this, data, indices, axis_);
  Tensor* out = Output(0);
  out->Resize(indices.dims());
  DispatchDataType(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* source = data.data<T>();
    T* destination = out->mutable_data<T>();
    for (size_t i = 0; i < offsets.size(); ++i) destination[i] = source[offsets[i]];
  });
}

GatherElementsGradientOp::GatherElementsGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 0)) {}

void GatherElementsGradientOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& indices = Input(1);
  const Tensor& dout = Input(2);
  DOPPIO_ENFORCE(dout.dims() == indices.dims() && dout.dtype() == data.dtype(), "dOUTPUT '",
                 input_name(2), "' ", dout.DebugString(), " must have INDICES' shape ",
                 indices.dims(), " and DATA's type");
  const std::vector<int64_t> offsets = ReadOffsets(*this, data, indices, axis_);
  Tensor* ddata = Output(0);
  ddata->ResizeLike(data);
  DispatchInput(FloatTypes{}, *this, 2, dout.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = ddata->template mutable_data<T>();
    std::fill(d, d + ddata->numel(), T(0));
    const T* g = dout.data<T>();
    for (size_t i = 0; i < offsets.size(); ++i) d[offsets[i]] += g[i];
  });
}

REGISTER_CPU_OPERATOR(GatherElements, GatherElementsOp);
REGISTER_CPU_OPERATOR(GatherElementsGradient, GatherElementsGradientOp);

namespace {

std::vector<TensorShape> GatherElementsInference(const OperatorDef&,
                                                 const std::vector<TensorShape>& in) {
  TensorShape out = in.at(1);
  out.set_data_type(in.at(0).data_type());
  return {out};
}

class GetGatherElementsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("GatherElementsGradient", "", {I(0), I(1), GO(0)}, {GI(0)},
                             Def().arg());
  }
};

}  // namespace

OPERATOR_SCHEMA(GatherElements)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(GatherElementsInference)
    .Arg("axis", "(int, default 0) the axis gathered along; negative counts from the end")
    .Input(0, "DATA", "any dtype, rank r")
    .Input(1, "INDICES", "int32 or int64, rank r, dims <= DATA's except along axis")
    .Output(0, "OUTPUT",
            "INDICES' shape: DATA at each position with its axis coordinate "
            "replaced by the index")
    .Doc("ONNX's GatherElements (torch.gather): an element-wise gather along one axis.");

OPERATOR_SCHEMA(GatherElementsGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .Arg("axis", "as GatherElements'")
    .Input(0, "DATA", "GatherElements' DATA")
    .Input(1, "INDICES", "GatherElements' INDICES")
    .Input(2, "dOUTPUT", "gradient of OUTPUT (float32 or float64)")
    .Output(0, "dDATA", "each dOUTPUT element added where it was read from")
    .Doc("Gradient of GatherElements with respect to DATA (INDICES get none).");

REGISTER_GRADIENT(GatherElements, GetGatherElementsGradient);
SHOULD_NOT_DO_GRADIENT(GatherElementsGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
