#include "operators/boolean_mask_ops.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

SequenceMaskOp::SequenceMaskOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      axis_(GetSingleArgument<int>("axis", 1)),
      radius_(GetSingleArgument<int>("radius", 10)),
      has_batch_(HasArgument("batch")),
      batch_(GetSingleArgument<int>("batch", 0)),
      has_repeat_(HasArgument("repeat_from_axis")),
      repeat_from_(GetSingleArgument<int>("repeat_from_axis", -1)) {
  const std::string mode = GetSingleArgument<std::string>("mode", "");
  const std::vector<std::pair<std::string, Mode>> modes = {
      {"sequence", Mode::kSequence},   {"window", Mode::kWindow},
      {"upper", Mode::kUpper},         {"lower", Mode::kLower},
      {"upperdiag", Mode::kUpperDiag}, {"lowerdiag", Mode::kLowerDiag}};
  bool found = false;
  for (const auto& entry : modes) {
    if (entry.first == mode) {
      mode_ = entry.second;
      found = true;
    }
  }
  DOPPIO_ENFORCE(found, "argument 'mode' is '", mode,
                 "'; it must be sequence, window, upper, lower, upperdiag or lowerdiag");
  const bool needs_vector = mode_ == Mode::kSequence || mode_ == Mode::kWindow;
  DOPPIO_ENFORCE_EQ(InputSize(), needs_vector ? 2 : 1, "mode '", mode, "' takes ",
                    needs_vector ? "X and a per-row int32 vector" : "X alone");
  DOPPIO_ENFORCE(!has_repeat_ || (mode_ == Mode::kSequence && !has_batch_),
                 "repeat_from_axis works in sequence mode without batch only");
  fill_ = GetSingleArgument<bool>("grad", false)
              ? 0.0f
              : GetSingleArgument<float>("fill_val", -std::numeric_limits<float>::infinity());
}

bool SequenceMaskOp::Masked(int64_t row, int64_t column, const int32_t* per_row,
                            int64_t rows) const {
  switch (mode_) {
    case Mode::kSequence:
      DOPPIO_ENFORCE(row < rows, "row ", row, " has no sequence length ('", input_name(1),
                     "' holds ", rows, ")");
      return column >= per_row[row];
    case Mode::kWindow:
      DOPPIO_ENFORCE(row < rows, "row ", row, " has no window centre ('", input_name(1), "' holds ",
                     rows, ")");
      return column > per_row[row] + radius_ || column < per_row[row] - radius_;
    case Mode::kUpper:
      return column > row;
    case Mode::kLower:
      return column < row;
    case Mode::kUpperDiag:
      return column >= row;
    case Mode::kLowerDiag:
      return column <= row;
  }
  return false;
}

void SequenceMaskOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.dtype() == DataType::kFloat, "X '", input_name(0), "' must be float32, not ",
                 X.DebugString());
  const int axis = X.CanonicalAxis(axis_);
  const int batch_axis = has_batch_ ? X.CanonicalAxis(batch_) : -1;
  DOPPIO_ENFORCE(!has_batch_ || batch_axis < axis, "batch (", batch_, ") must come before axis (",
                 axis_, ")");
  const int64_t batches = has_batch_ ? X.SizeToDim(batch_axis + 1) : 1;
  const int64_t rows = has_batch_ ? X.SizeBetweenDims(batch_axis + 1, axis) : X.SizeToDim(axis);
  int64_t columns = X.SizeFromDim(axis);
  int64_t repeat = 1;
  if (has_repeat_) {
    const int from = X.CanonicalAxis(repeat_from_);
    DOPPIO_ENFORCE(from >= axis, "repeat_from_axis must not come before axis");
    repeat = X.SizeFromDim(from);
    columns /= repeat;
  }
  const int32_t* per_row = nullptr;
  int64_t per_row_count = 0;
  if (InputSize() == 2) {
    const Tensor& vector = Input(1);
    DOPPIO_ENFORCE(vector.dtype() == DataType::kInt32 && vector.ndim() == 1, "'", input_name(1),
                   "' must be an int32 vector, not ", vector.DebugString());
    per_row = vector.data<int32_t>();
    per_row_count = vector.numel();
  }
  Tensor* Y = Output(0);
  Y->ResizeLike(X);
  const float* x = X.data<float>();
  float* y = Y->mutable_data<float>();
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) {
        const bool masked = Masked(r, c, per_row, per_row_count);
        const int64_t base = ((b * rows + r) * columns + c) * repeat;
        for (int64_t k = 0; k < repeat; ++k) y[base + k] = masked ? fill_ : x[base + k];
      }
    }
  }
}

void BooleanMaskOp::RunOnDevice() {
  const Tensor& data = Input(0);
  const Tensor& mask = Input(1);
  EnforceHasRows(*this, 0, data);
  DOPPIO_ENFORCE(mask.dtype() == DataType::kBool && mask.ndim() == 1 && mask.numel() == data.dim(0),
                 "mask '", input_name(1), "' must be bool [", data.dim(0), "] (one per row of '",
                 input_name(0), "'), not ", mask.DebugString());
  const bool* keep = mask.data<bool>();
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < mask.numel(); ++i) {
    if (keep[i]) rows.push_back(i);
  }
  Tensor* out = Output(0);
  out->Resize(ShapeOfRows({static_cast<int64_t>(rows.size())}, data));
  const int64_t row_size = data.SizeFromDim(1);
  if (data.dtype() == DataType::kString) {
    const std::string* from = data.data<std::string>();
    std::string* to = out->mutable_data<std::string>();
    for (size_t r = 0; r < rows.size(); ++r) {
      for (int64_t k = 0; k < row_size; ++k) to[r * row_size + k] = from[rows[r] * row_size + k];
    }
  } else {
    const size_t row_bytes = static_cast<size_t>(row_size) * data.itemsize();
    const char* from = static_cast<const char*>(data.raw_data());
    char* to = static_cast<char*>(out->raw_mutable_data(data.dtype()));
    for (size_t r = 0; r < rows.size(); ++r) {
      if (row_bytes > 0) std::memcpy(to + r * row_bytes, from + rows[r] * row_bytes, row_bytes);
    }
  }
  if (OutputSize() == 2) {
    Tensor* indices = Output(1);
    indices->Resize({static_cast<int64_t>(rows.size())});
    int64_t* index = indices->mutable_data<int64_t>();
    for (size_t r = 0; r < rows.size(); ++r) index[r] = rows[r];
  }
}

REGISTER_CPU_OPERATOR(BooleanMask, BooleanMaskOp);
REGISTER_CPU_OPERATOR(SequenceMask, SequenceMaskOp);

OPERATOR_SCHEMA(BooleanMask)
    .NumInputs(2)
    .NumOutputs(1, 2)
    .Input(0, "data", "tensor of any type, [N, ...]")
    .Input(1, "mask", "bool [N]")
    .Output(0, "masked_data", "the rows of data where mask is true")
    .Output(1, "masked_indices", "(optional) their indices, int64")
    .Doc("Keeps the rows of data whose mask entry is true (numpy's data[mask]).");

NO_GRADIENT(BooleanMask, "it selects rows by a data-dependent mask; Caffe2 defines none either");

OPERATOR_SCHEMA(SequenceMask)
    .NumInputs(1, 2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("mode", "sequence, window, upper, lower, upperdiag or lowerdiag", true)
    .Arg("axis", "(int, default 1) the column index is the dims from here on")
    .Arg("batch", "(int, optional) dims up to here are batches, each masked alike")
    .Arg("radius", "(int, default 10) window mode's half width")
    .Arg("fill_val", "(float, default -inf) the value of masked entries")
    .Arg("grad", "(bool, default false) gradient mode: masked entries become 0")
    .Arg("repeat_from_axis", "(int) sequence mode: dims from here on are one masked element")
    .Input(0, "X", "float32 tensor")
    .Input(1, "lengths", "int32 per-row sequence lengths (sequence) or window centres (window)")
    .Output(0, "Y", "X with masked entries set to fill_val; may be X")
    .Doc(
        "Masks a tensor viewed as rows x columns for attention: sequence mode masks column >= "
        "lengths[row], window mode columns outside centre +- radius, the triangular modes by "
        "comparing column and row (upper: column > row, lower: <, upperdiag: >=, lowerdiag: "
        "<=).");

namespace {

class GetSequenceMaskGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs{GO(0)};
    if (Def().input_size() == 2) inputs.push_back(I(1));
    std::vector<OperatorDef> ops =
        SingleGradientDef("SequenceMask", "", inputs, {GI(0)}, Def().arg());
    SetArgument(&ops[0], "grad", 1);
    return ops;
  }
};

}  // namespace

REGISTER_GRADIENT(SequenceMask, GetSequenceMaskGradient);

}  // namespace doppio
