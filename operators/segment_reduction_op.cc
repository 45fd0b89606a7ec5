#include "operators/segment_reduction_op.h"

#include <algorithm>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

// SEGMENT_IDS (input 1) as int64 values; a vector of `rows` entries.
std::vector<int64_t> ReadSegmentIds(const OperatorBase& op, const Tensor& ids,
                                    int64_t rows, int rows_input) {
  EnforceVector(op, 1, ids);
  DOPPIO_ENFORCE(ids.dim(0) == rows, "'", op.input_name(1), "' has ", ids.dim(0),
                 " segment ids but '", op.input_name(rows_input), "' has ", rows,
                 " rows; there must be one id per row");
  std::vector<int64_t> values(static_cast<size_t>(rows));
  DispatchInput(IndexTypes{}, op, 1, ids.dtype(), [&](auto tag) {
    using Index = typename decltype(tag)::type;
    const Index* data = ids.data<Index>();
    std::copy(data, data + rows, values.begin());
  });
  return values;
}

}  // namespace

// ---- UnsortedSegmentSum ----

UnsortedSegmentSumOp::UnsortedSegmentSumOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      num_segments_(GetSingleArgument<int64_t>("num_segments", -1)) {
  DOPPIO_ENFORCE(num_segments_ >= -1,
                 "num_segments must be >= 0 (or -1 "
                 "for one past the largest id), got ",
                 num_segments_);
}

void UnsortedSegmentSumOp::RunOnDevice() {
  const Tensor& data = Input(0);
  EnforceHasRows(*this, 0, data);
  const int64_t rows = data.dim(0);
  const std::vector<int64_t> ids = ReadSegmentIds(*this, Input(1), rows, 0);
  int64_t segments = num_segments_;
  if (segments < 0) {
    segments = 0;
    for (int64_t id : ids) segments = std::max(segments, id + 1);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    DOPPIO_ENFORCE(ids[i] >= 0 && ids[i] < segments, "segment id ", ids[i], " at position ", i,
                   " of '", input_name(1), "' is out of range [0, ", segments, ")");
  }
  const int64_t row_size = data.SizeFromDim(1);
  const std::vector<int64_t> output_dims = ShapeOfRows({segments}, data);

  DispatchTypes(FloatTypes{}, input_name(0), data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* source = data.data<T>();
    Tensor* output = Output(0);
    output->Resize(output_dims);
    T* destination = output->mutable_data<T>();
    std::fill(destination, destination + output->numel(), T(0));
    for (int64_t i = 0; i < rows; ++i) {
      const T* in_row = source + i * row_size;
      T* out_row = destination + ids[i] * row_size;
      for (int64_t k = 0; k < row_size; ++k) out_row[k] += in_row[k];
    }
  });
}

REGISTER_CPU_OPERATOR(UnsortedSegmentSum, UnsortedSegmentSumOp);

OPERATOR_SCHEMA(UnsortedSegmentSum)
    .NumInputs(2)
    .NumOutputs(1)
    .Arg("num_segments", "(int, optional) number of output rows; by default one past the "
                         "largest segment id")
    .Input(0, "DATA", "float32 or float64 tensor of rank >= 1")
    .Input(1, "SEGMENT_IDS", "int32 or int64 vector: the output row of each DATA row")
    .Output(0, "OUTPUT", "[K] + DATA.shape[1:], K = num_segments or max(id) + 1")
    .Doc("OUTPUT[s] = sum of the rows i of DATA with SEGMENT_IDS[i] == s (ids in any "
         "order; rows of unused ids are 0).");

namespace {

class GetUnsortedSegmentSumGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("UnsortedSegmentSumGradient", "", {GO(0), I(1)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(UnsortedSegmentSum, GetUnsortedSegmentSumGradient);

// ---- UnsortedSegmentSumGradient ----

void UnsortedSegmentSumGradientOp::RunOnDevice() {
  const Tensor& output_grad = Input(0);
  const Tensor& ids_tensor = Input(1);
  EnforceHasRows(*this, 0, output_grad);
  EnforceVector(*this, 1, ids_tensor);
  const int64_t rows = ids_tensor.dim(0);
  const std::vector<int64_t> ids = ReadSegmentIds(*this, ids_tensor, rows, 1);
  const int64_t segments = output_grad.dim(0);
  for (size_t i = 0; i < ids.size(); ++i) {
    DOPPIO_ENFORCE(ids[i] >= 0 && ids[i] < segments, "segment id ", ids[i], " at position ", i,
                   " of '", input_name(1), "' is out of range [0, ", segments, ") of the rows of '",
                   input_name(0), "'");
  }
  const int64_t row_size = output_grad.SizeFromDim(1);
  const std::vector<int64_t> grad_dims = ShapeOfRows({rows}, output_grad);

  DispatchTypes(FloatTypes{}, input_name(0), output_grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* source = output_grad.data<T>();
    Tensor* data_grad = Output(0);
    data_grad->Resize(grad_dims);
    T* destination = data_grad->mutable_data<T>();
    for (int64_t i = 0; i < rows; ++i) {
      const T* in_row = source + ids[i] * row_size;
      std::copy(in_row, in_row + row_size, destination + i * row_size);
    }
  });
}

REGISTER_CPU_OPERATOR(UnsortedSegmentSumGradient, UnsortedSegmentSumGradientOp);

OPERATOR_SCHEMA(UnsortedSegmentSumGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(InferRowsPerEntry(1))
    .Input(0, "SEGMENT_GRADS", "gradient of UnsortedSegmentSum's output")
    .Input(1, "SEGMENT_IDS", "the forward op's SEGMENT_IDS")
    .Output(0, "DATA_GRAD", "[len(SEGMENT_IDS)] + SEGMENT_GRADS.shape[1:]: row i is "
                            "SEGMENT_GRADS[SEGMENT_IDS[i]]")
    .Doc("Gradient of UnsortedSegmentSum: gathers the output gradient's rows by id.");

SHOULD_NOT_DO_GRADIENT(UnsortedSegmentSumGradient, "it is itself a gradient op");

}  // namespace doppio
