#include "operators/gather_op.h"

#include <algorithm>
#include <vector>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

// ---- Gather ----

void EnforceGatherAxis(const OperatorBase& op) {
  const int axis = op.GetSingleArgument<int>("axis", 0);
  DOPPIO_ENFORCE(axis == 0, "axis ", axis,
                 " is not supported; Gather indexes the first dimension (axis 0)");
}

GatherOp::GatherOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      wrap_indices_(GetSingleArgument<bool>("wrap_indices", false)) {
  EnforceGatherAxis(*this);
}

void GatherOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& indices = Input(1);
  EnforceHasRows(*this, 0, data);
  const int64_t rows = data.dim(0);
  const int64_t row_size = data.SizeFromDim(1);
  const std::vector<int64_t> output_dims = ShapeOfRows(indices.dims(), data);

  DispatchInput(IndexTypes{}, *this, 1, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    const int64_t count = indices.numel();
    if (wrap_indices_) {
      // -rows..-1 count from the end (numpy's, ONNX's); the rest must fit.
      wrapped_.resize(count);
      for (int64_t k = 0; k < count; ++k) {
        const int64_t i = static_cast<int64_t>(index[k]);
        DOPPIO_ENFORCE(i >= -rows && i < rows, "index ", i, " at position ", k, " of '",
                       input_name(1), "' is out of range [-", rows, ", ", rows,
                       ") of the first dimension of '", input_name(0), "'");
        wrapped_[k] = i < 0 ? i + rows : i;
      }
    } else {
      CheckIndicesInRange(*this, 1, index, count, rows, 0);
    }
    Tensor* output = Output(0);
    output->Resize(output_dims);
    DispatchDataType(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* source = data.data<T>();
      T* destination = output->mutable_data<T>();
      for (int64_t k = 0; k < count; ++k) {
        const int64_t i = wrap_indices_ ? wrapped_[k] : static_cast<int64_t>(index[k]);
        const T* row = source + i * row_size;
        std::copy(row, row + row_size, destination + k * row_size);
      }
    });
  });
}

REGISTER_CPU_OPERATOR(Gather, GatherOp);

OPERATOR_SCHEMA(Gather)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out;
      for (int64_t d : in[1].dims()) out.add_dims(d);
      for (int i = 1; i < in[0].dims_size(); ++i) out.add_dims(in[0].dims(i));
      out.set_data_type(in[0].data_type());
      return std::vector<TensorShape>{out};
    })
    .Arg("axis", "(int, default 0) only 0 is supported: rows of the first dimension")
    .Arg("dense_gradient", "(bool, default false) not supported: the gradient is sparse")
    .Arg("wrap_indices",
         "(bool, default false) indices in [-rows, 0) count from the end (numpy's and ONNX's "
         "rule; later Caffe2 wraps by default at axis 0, Doppio only when asked). The forward "
         "op only: the sparse gradient would carry the negative indices")
    .Input(0, "DATA", "tensor of rank r >= 1, any dtype")
    .Input(1, "INDICES", "int32 or int64 tensor of rank q; each in [0, DATA.shape[0])")
    .Output(0, "OUTPUT", "tensor of rank q + r - 1: INDICES.shape + DATA.shape[1:]")
    .Doc(
        "Gathers rows of DATA (entries of its first dimension) at INDICES. The gradient "
        "of DATA is sparse: a GradientSlice of INDICES and the output gradient.");

namespace {

class GetGatherGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(!ArgumentHelper(Def()).GetSingle<bool>("dense_gradient", false),
                   "op Gather: dense_gradient is not supported; its gradient is a "
                   "GradientSlice (indices, values)");
    // As in Caffe2 no op runs: the slice is (INDICES, dOUTPUT), whose values
    // keep dOUTPUT's shape, INDICES.shape + row shape, i.e. one row per index.
    SetSparse(0, I(1), GO(0));
    return {};
  }
};

}  // namespace

REGISTER_GRADIENT(Gather, GetGatherGradient);

// ---- BatchGather ----

namespace {

// The geometry both BatchGather ops share: DATA [batch, rows, block...].
struct BatchGatherShape {
  int64_t batch = 0, rows = 0, block = 0, count = 0;
};

BatchGatherShape CheckBatchGather(const OperatorBase& op, const Tensor& data,
                                  const Tensor& indices) {
  DOPPIO_ENFORCE(data.ndim() >= 2, "DATA '", op.input_name(0),
                 "' must have rank 2 or more (batch, rows, ...), got shape ", data.dims());
  return {data.dim(0), data.dim(1), data.SizeFromDim(2), indices.numel()};
}

// Indices address DATA's second dimension, which CheckIndicesInRange (first
// dimensions) does not cover.
template <typename Index>
void CheckBatchIndices(const OperatorBase& op, const BatchGatherShape& shape, const Index* index) {
  for (int64_t k = 0; k < shape.count; ++k) {
    DOPPIO_ENFORCE(index[k] >= 0 && index[k] < shape.rows, "index ", static_cast<int64_t>(index[k]),
                   " at position ", k, " of '", op.input_name(1), "' is out of range [0, ",
                   shape.rows, ") of the second dimension of '", op.input_name(0), "'");
  }
}

// Calls visit(b, k, row) for output row (b, k), which reads DATA[b, row].
template <typename Index, typename Visit>
void ForEachBatchRow(const BatchGatherShape& shape, const Index* index, Visit visit) {
  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t k = 0; k < shape.count; ++k) visit(b, k, static_cast<int64_t>(index[k]));
  }
}

}  // namespace

void BatchGatherOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& indices = Input(1);
  const BatchGatherShape shape = CheckBatchGather(*this, data, indices);
  std::vector<int64_t> output_dims{shape.batch};
  output_dims.insert(output_dims.end(), indices.dims().begin(), indices.dims().end());
  output_dims.insert(output_dims.end(), data.dims().begin() + 2, data.dims().end());
  DispatchInput(IndexTypes{}, *this, 1, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckBatchIndices(*this, shape, index);
    Tensor* output = Output(0);
    output->Resize(output_dims);
    DispatchDataType(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* source = data.data<T>();
      T* destination = output->mutable_data<T>();
      ForEachBatchRow(shape, index, [&](int64_t b, int64_t k, int64_t row) {
        const T* from = source + (b * shape.rows + row) * shape.block;
        std::copy(from, from + shape.block, destination + (b * shape.count + k) * shape.block);
      });
    });
  });
}

void BatchGatherGradientOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& indices = Input(1);
  const Tensor& output_grad = Input(2);
  const BatchGatherShape shape = CheckBatchGather(*this, data, indices);
  DOPPIO_ENFORCE(output_grad.numel() == shape.batch * shape.count * shape.block, "gradient '",
                 input_name(2), "' has shape ", output_grad.dims(), " but BatchGather of '",
                 input_name(0), "' at '", input_name(1), "' gives ",
                 shape.batch * shape.count * shape.block, " elements");
  DispatchInput(IndexTypes{}, *this, 1, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckBatchIndices(*this, shape, index);
    DispatchTypes(FloatTypes{}, input_name(2), output_grad.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* source = output_grad.data<T>();
      Tensor* data_grad = Output(0);
      data_grad->Resize(data.dims());
      T* destination = data_grad->mutable_data<T>();
      std::fill(destination, destination + data_grad->numel(), T(0));
      ForEachBatchRow(shape, index, [&](int64_t b, int64_t k, int64_t row) {
        const T* from = source + (b * shape.count + k) * shape.block;
        T* to = destination + (b * shape.rows + row) * shape.block;
        for (int64_t j = 0; j < shape.block; ++j) to[j] += from[j];
      });
    });
  });
}

REGISTER_CPU_OPERATOR(BatchGather, BatchGatherOp);
REGISTER_CPU_OPERATOR(BatchGatherGradient, BatchGatherGradientOp);

OPERATOR_SCHEMA(BatchGather)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out;
      out.set_data_type(in[0].data_type());
      if (in[0].dims_size() < 2) {
        out.set_unknown_shape(true);
        return std::vector<TensorShape>{out};
      }
      out.add_dims(in[0].dims(0));
      for (int64_t d : in[1].dims()) out.add_dims(d);
      for (int i = 2; i < in[0].dims_size(); ++i) out.add_dims(in[0].dims(i));
      return std::vector<TensorShape>{out};
    })
    .Input(0, "DATA", "tensor of rank >= 2 [batch, rows, ...], any dtype")
    .Input(1, "INDICES", "int32 or int64 tensor; each in [0, DATA.shape[1])")
    .Output(0, "OUTPUT", "[batch] + INDICES.shape + DATA.shape[2:]")
    .Doc("Gathers entries of DATA's second dimension at INDICES, for every batch entry.");

OPERATOR_SCHEMA(BatchGatherGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{in[0]};
    })
    .Input(0, "DATA", "BatchGather's DATA (for its shape)")
    .Input(1, "INDICES", "BatchGather's INDICES")
    .Input(2, "dOUTPUT", "gradient of BatchGather's output, float32 or float64")
    .Output(0, "dDATA", "DATA's shape: zeros plus each gradient row where it was read")
    .Doc("Gradient of BatchGather for DATA (dense; repeated indices add up).");

namespace {

class GetBatchGatherGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("BatchGatherGradient", "", {I(0), I(1), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(BatchGather, GetBatchGatherGradient);
SHOULD_NOT_DO_GRADIENT(BatchGatherGradient,
                       "it is a gradient op; second derivatives are not supported");

// ---- ScatterAssign ----

ScatterAssignOp::ScatterAssignOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace) {}

void ScatterAssignOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& indices = Input(1);
  const Tensor& slices = Input(2);
  EnforceHasRows(*this, 0, data);
  EnforceSameType(*this, 0, data, 2, slices);
  const int64_t rows = data.dim(0);
  const int64_t row_size = data.SizeFromDim(1);
  const int64_t count = indices.numel();
  // Like Caffe2, only sizes matter: SLICES is read as count rows of DATA.
  DOPPIO_ENFORCE(slices.numel() == count * row_size, "'", input_name(2), "' has ", slices.numel(),
                 " elements (shape ", slices.dims(), ") but ", count, " indices in '",
                 input_name(1), "' times rows of ", row_size, " elements of '", input_name(0),
                 "' need ", count * row_size);

  DispatchInput(IndexTypes{}, *this, 1, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckIndicesInRange(*this, 1, index, count, rows, 0);
    DispatchDataType(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* source = slices.data<T>();
      // Output 0 is DATA's own tensor (EnforceInplace), so this keeps it.
      T* destination = Output(0)->mutable_data<T>();
      for (int64_t k = 0; k < count; ++k) {
        std::copy(source + k * row_size, source + (k + 1) * row_size,
                  destination + static_cast<int64_t>(index[k]) * row_size);
      }
    });
  });
}

REGISTER_CPU_OPERATOR(ScatterAssign, ScatterAssignOp);

OPERATOR_SCHEMA(ScatterAssign)
    .NumInputs(3)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "DATA", "tensor to update in place, rank >= 1")
    .Input(1, "INDICES", "int32 or int64 indices into the first dimension of DATA")
    .Input(2, "SLICES", "len(INDICES) rows of DATA's row size and DATA's dtype")
    .Output(0, "DATA", "DATA itself, with the indexed rows overwritten")
    .Doc("Overwrites rows INDICES of DATA with SLICES, in place. Only element counts "
         "are checked, not shapes; with repeated indices the last slice wins.");

SHOULD_NOT_DO_GRADIENT(ScatterAssign,
                       "it overwrites DATA in place; as in Caffe2 it has no gradient");

}  // namespace doppio
