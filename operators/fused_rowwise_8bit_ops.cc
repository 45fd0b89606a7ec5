#include "operators/fused_rowwise_8bit_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/lengths_reducer_ops.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

// Bytes after a row's quantized values: its scale and bias, float32 each.
constexpr int64_t kScaleBiasBytes = 2 * sizeof(float);
// Keeps a constant row (range 0) from dividing by zero, as Caffe2's.
constexpr float kRangeEpsilon = 1e-8f;

// Scale and bias stored at the end of a fused row with `columns` values.
// memcpy because a row's tail need not be 4-byte aligned.
void ReadScaleBias(const uint8_t* row, int64_t columns, float* scale, float* bias) {
  std::memcpy(scale, row + columns, sizeof(float));
  std::memcpy(bias, row + columns + sizeof(float), sizeof(float));
}

// Adds weight * (dequantized row) to out.
void AccumulateRow(const uint8_t* row, int64_t columns, float weight, float* out) {
  float scale, bias;
  ReadScaleBias(row, columns, &scale, &bias);
  for (int64_t j = 0; j < columns; ++j) out[j] += weight * (row[j] * scale + bias);
}

// Checks that input `input` is a 2-D uint8 fused table and returns the
// number of values per row.
int64_t FusedColumns(const OperatorBase& op, int input, const Tensor& data) {
  DOPPIO_ENFORCE(data.dtype() == DataType::kUint8 && data.ndim() == 2, "'", op.input_name(input),
                 "' must be a 2-D uint8 fused 8-bit row-wise table (from "
                 "FloatToFused8BitRowwiseQuantized), not ",
                 data.DebugString());
  DOPPIO_ENFORCE(data.dim(1) >= kScaleBiasBytes, "'", op.input_name(input), "' has rows of ",
                 data.dim(1), " bytes; a fused row ends with ", kScaleBiasBytes,
                 " bytes of scale and bias");
  return data.dim(1) - kScaleBiasBytes;
}

}  // namespace

void FloatToFused8BitRowwiseQuantizedOp::RunOnDevice() {
  const Tensor& input = Input(0);
  DOPPIO_ENFORCE(input.dtype() == DataType::kFloat && input.ndim() == 2, "'", input_name(0),
                 "' must be a 2-D float32 matrix, not ", input.DebugString());
  const int64_t rows = input.dim(0), columns = input.dim(1);
  Tensor* output = Output(0);
  output->Resize({rows, columns + kScaleBiasBytes});
  const float* x = input.data<float>();
  uint8_t* y = output->mutable_data<uint8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * columns;
    uint8_t* out = y + r * (columns + kScaleBiasBytes);
    float minimum = 0.0f, maximum = 0.0f;
    if (columns > 0) {
      const auto [low, high] = std::minmax_element(in, in + columns);
      minimum = *low;  // the first minimal element, -0 kept, as Caffe2's
      maximum = *high;
    }
    const float range = maximum - minimum;
    const float scale = range / 255.0f;
    const float inverse_scale = 255.0f / (range + kRangeEpsilon);
    for (int64_t j = 0; j < columns; ++j) {
      const float level = std::round((in[j] - minimum) * inverse_scale);
      // nan (a row holding nan or inf) becomes 0; the clamp keeps the cast defined.
      out[j] = static_cast<uint8_t>(std::isnan(level) ? 0.0f : std::clamp(level, 0.0f, 255.0f));
    }
    std::memcpy(out + columns, &scale, sizeof(float));
    std::memcpy(out + columns + sizeof(float), &minimum, sizeof(float));
  }
}

void Fused8BitRowwiseQuantizedToFloatOp::RunOnDevice() {
  const Tensor& input = Input(0);
  const int64_t columns = FusedColumns(*this, 0, input);
  const int64_t rows = input.dim(0);
  Tensor* output = Output(0);
  output->Resize({rows, columns});
  const uint8_t* x = input.data<uint8_t>();
  float* y = output->mutable_data<float>();
  std::fill(y, y + output->numel(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    AccumulateRow(x + r * input.dim(1), columns, 1.0f, y + r * columns);
  }
}

void GatherFused8BitRowwiseOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const int64_t columns = FusedColumns(*this, 0, data);
  EnforceVector(*this, 1, Input(1));
  const std::vector<int64_t> rows = ReadRowIndices(*this, 1, Input(1), data.dim(0), 0);
  Tensor* output = Output(0);
  output->Resize({static_cast<int64_t>(rows.size()), columns});
  float* y = output->mutable_data<float>();
  std::fill(y, y + output->numel(), 0.0f);
  for (size_t i = 0; i < rows.size(); ++i) {
    AccumulateRow(data.data<uint8_t>() + rows[i] * data.dim(1), columns, 1.0f,
                  y + static_cast<int64_t>(i) * columns);
  }
}

template <FusedReduction kReduction>
void SparseLengthsFused8BitRowwiseOp<kReduction>::RunOnDevice() {
  const Tensor& data = Input(0);
  const int64_t columns = FusedColumns(*this, 0, data);
  EnforceVector(*this, kIndicesInput, Input(kIndicesInput));
  const std::vector<int64_t> rows =
      ReadRowIndices(*this, kIndicesInput, Input(kIndicesInput), data.dim(0), 0);
  int64_t total = 0;
  const std::vector<int64_t> lengths =
      ReadLengths(*this, kLengthsInput, Input(kLengthsInput), &total);
  DOPPIO_ENFORCE(total == static_cast<int64_t>(rows.size()), "the lengths in '",
                 input_name(kLengthsInput), "' sum to ", total, " but '", input_name(kIndicesInput),
                 "' has ", rows.size(), " indices; they must match");
  const float* weights = nullptr;
  if (kWeighted) {
    const Tensor& w = Input(1);
    DOPPIO_ENFORCE(w.dtype() == DataType::kFloat && w.ndim() == 1 && w.numel() == total, "'",
                   input_name(1), "' must be a float32 vector of one weight per index (", total,
                   "), not ", w.DebugString());
    weights = w.data<float>();
  }
  Tensor* output = Output(0);
  output->Resize({static_cast<int64_t>(lengths.size()), columns});
  float* y = output->mutable_data<float>();
  std::fill(y, y + output->numel(), 0.0f);
  int64_t position = 0;
  for (size_t s = 0; s < lengths.size(); ++s) {
    float* out = y + static_cast<int64_t>(s) * columns;
    // A mean weighs each row by 1 / length; an empty segment stays 0.
    const float mean_weight =
        kReduction == FusedReduction::kMean && lengths[s] > 0 ? 1.0f / lengths[s] : 1.0f;
    for (int64_t k = 0; k < lengths[s]; ++k, ++position) {
      const float weight = weights != nullptr ? weights[position] : mean_weight;
      AccumulateRow(data.data<uint8_t>() + rows[position] * data.dim(1), columns, weight, out);
    }
  }
}

REGISTER_CPU_OPERATOR(FloatToFused8BitRowwiseQuantized, FloatToFused8BitRowwiseQuantizedOp);
REGISTER_CPU_OPERATOR(Fused8BitRowwiseQuantizedToFloat, Fused8BitRowwiseQuantizedToFloatOp);
REGISTER_CPU_OPERATOR(GatherFused8BitRowwise, GatherFused8BitRowwiseOp);
REGISTER_CPU_OPERATOR(SparseLengthsSumFused8BitRowwise,
                      SparseLengthsFused8BitRowwiseOp<FusedReduction::kSum>);
REGISTER_CPU_OPERATOR(SparseLengthsWeightedSumFused8BitRowwise,
                      SparseLengthsFused8BitRowwiseOp<FusedReduction::kWeightedSum>);
REGISTER_CPU_OPERATOR(SparseLengthsMeanFused8BitRowwise,
                      SparseLengthsFused8BitRowwiseOp<FusedReduction::kMean>);

namespace {

// Output [dim0 of input `rows_input`, columns] as float, where columns is
// input 0's row width adjusted by `column_change` bytes.
OpSchema::InferenceFunction RowsTimesColumns(int rows_input, int column_change,
                                             TensorProto::DataType type) {
  return [=](const OperatorDef&, const std::vector<TensorShape>& in) {
    TensorShape out;
    out.set_data_type(type);
    const TensorShape& table = in.at(0);
    if (table.dims_size() != 2 || in.at(rows_input).dims_size() < 1) {
      out.set_unknown_shape(true);
    } else {
      out.add_dims(in[rows_input].dims(0));
      out.add_dims(table.dims(1) + column_change);
    }
    return std::vector<TensorShape>{out};
  };
}

constexpr const char kTableDoc[] = "uint8 [R, C + 8] table from FloatToFused8BitRowwiseQuantized";
constexpr const char kIndicesDoc[] = "int32 or int64 vector of rows of DATA";
constexpr const char kLengthsDoc[] = "int32 or int64 segment lengths, summing to INDICES' size";
// The schema of a SparseLengths*Fused8BitRowwise reducer: DATA, WEIGHTS
// when `weighted` (the caller documents it), INDICES, LENGTHS.
std::function<void(OpSchema&)> FusedLengthsSchema(bool weighted) {
  return [weighted](OpSchema& schema) {
    const int indices = weighted ? 2 : 1;
    schema.NumInputs(indices + 2)
        .NumOutputs(1)
        .TensorInferenceFunction(
            RowsTimesColumns(indices + 1, -kScaleBiasBytes, TensorProto::FLOAT))
        .Input(0, "DATA", kTableDoc)
        .Input(indices, "INDICES", kIndicesDoc)
        .Input(indices + 1, "LENGTHS", kLengthsDoc);
  };
}

constexpr const char kNoGradient[] =
    "the quantized table is not trainable; train the float table and quantize it";

}  // namespace

OPERATOR_SCHEMA(FloatToFused8BitRowwiseQuantized)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(RowsTimesColumns(0, kScaleBiasBytes, TensorProto::UINT8))
    .Input(0, "input", "float32 matrix [R, C]")
    .Output(0, "output", "uint8 [R, C + 8]: each row's bytes, then its scale and bias")
    .Doc(
        "Quantizes each row to 8 bits with its own scale ((max - min) / 255) and bias "
        "(min), stored as two float32s after the row's bytes.");

OPERATOR_SCHEMA(Fused8BitRowwiseQuantizedToFloat)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(RowsTimesColumns(0, -kScaleBiasBytes, TensorProto::FLOAT))
    .Input(0, "scale_bias_quantized_input", kTableDoc)
    .Output(0, "float_output", "float32 [R, C]: byte * scale + bias")
    .Doc("Dequantizes a fused 8-bit row-wise table.");

OPERATOR_SCHEMA(GatherFused8BitRowwise)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(RowsTimesColumns(1, -kScaleBiasBytes, TensorProto::FLOAT))
    .Input(0, "DATA", kTableDoc)
    .Input(1, "INDICES", kIndicesDoc)
    .Output(0, "output", "float32 [N, C]: the indexed rows, dequantized")
    .Doc("Gather on a fused 8-bit row-wise table, returning float rows.");

OPERATOR_SCHEMA(SparseLengthsSumFused8BitRowwise)
    .Apply(FusedLengthsSchema(false))
    .Output(0, "output", "float32 [segments, C]: the sum of each segment's rows")
    .Doc("SparseLengthsSum over a fused 8-bit row-wise table.");

OPERATOR_SCHEMA(SparseLengthsWeightedSumFused8BitRowwise)
    .Apply(FusedLengthsSchema(true))
    .Input(1, "WEIGHTS", "float32 vector, one weight per index")
    .Output(0, "output", "float32 [segments, C]: the weighted sum of each segment's rows")
    .Doc(
        "SparseLengthsWeightedSum over a fused 8-bit row-wise table (inputs in "
        "Caffe2's order: DATA, WEIGHTS, INDICES, LENGTHS).");

OPERATOR_SCHEMA(SparseLengthsMeanFused8BitRowwise)
    .Apply(FusedLengthsSchema(false))
    .Output(0, "output", "float32 [segments, C]: the mean of each segment's rows (0 if empty)")
    .Doc("SparseLengthsMean over a fused 8-bit row-wise table.");

NO_GRADIENT(FloatToFused8BitRowwiseQuantized, "quantization is piecewise constant");
NO_GRADIENT(Fused8BitRowwiseQuantizedToFloat, kNoGradient);
NO_GRADIENT(GatherFused8BitRowwise, kNoGradient);
NO_GRADIENT(SparseLengthsSumFused8BitRowwise, kNoGradient);
NO_GRADIENT(SparseLengthsWeightedSumFused8BitRowwise, kNoGradient);
NO_GRADIENT(SparseLengthsMeanFused8BitRowwise, kNoGradient);

}  // namespace doppio
