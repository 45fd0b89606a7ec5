#include "operators/lengths_reducer_ops.h"

#include <algorithm>
#include <limits>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

std::vector<int64_t> ReadLengths(const OperatorBase& op, int input, const Tensor& lengths,
                                 int64_t* total) {
  EnforceVector(op, input, lengths);
  std::vector<int64_t> values(static_cast<size_t>(lengths.numel()));
  DispatchInput(IndexTypes{}, op, input, lengths.dtype(), [&](auto tag) {
    using L = typename decltype(tag)::type;
    const L* data = lengths.data<L>();
    std::copy(data, data + lengths.numel(), values.begin());
  });
  *total = 0;
  for (size_t r = 0; r < values.size(); ++r) {
    DOPPIO_ENFORCE(values[r] >= 0, "length ", values[r], " at position ", r, " of '",
                   op.input_name(input), "' is negative; lengths count rows and must be >= 0");
    DOPPIO_ENFORCE(values[r] <= std::numeric_limits<int64_t>::max() - *total, "the lengths in '",
                   op.input_name(input), "' overflow int64 when summed");
    *total += values[r];
  }
  return values;
}

// ---- forward ----

template <bool kSparse, bool kMean, bool kWeighted>
void LengthsReducerOp<kSparse, kMean, kWeighted>::RunOnDevice() {
  const Tensor& data = Input(0);
  EnforceHasRows(*this, 0, data);
  int64_t total = 0;
  const std::vector<int64_t> lengths =
      ReadLengths(*this, kLengthsInput, Input(kLengthsInput), &total);
  const int64_t rows = data.dim(0);
  const int64_t row_size = data.SizeFromDim(1);

  // The rows each segment reduces, in order: positions into DATA.
  std::vector<int64_t> source_rows;
  if (kSparse) {
    const Tensor& indices = Input(kIndicesInput);
    EnforceVector(*this, kIndicesInput, indices);
    DOPPIO_ENFORCE(total == indices.numel(), "the lengths in '", input_name(kLengthsInput),
                   "' sum to ", total, " but '", input_name(kIndicesInput), "' has ",
                   indices.numel(), " indices; they must match");
    source_rows = ReadRowIndices(*this, kIndicesInput, indices, rows, 0);
  } else {
    DOPPIO_ENFORCE(total == rows, "the lengths in '", input_name(kLengthsInput), "' sum to ", total,
                   " but '", input_name(0), "' has ", rows, " rows; they must match");
  }

  if (kWeighted) {
    const Tensor& weights = Input(kWeightsInput);
    EnforceVector(*this, kWeightsInput, weights);
    EnforceSameType(*this, 0, data, kWeightsInput, weights);
    DOPPIO_ENFORCE(weights.numel() == total, "'", input_name(kWeightsInput), "' has ",
                   weights.numel(), " weights but '", input_name(kIndicesInput), "' has ", total,
                   " indices; one weight per index");
  }
  const std::vector<int64_t> output_dims =
      ShapeOfRows({static_cast<int64_t>(lengths.size())}, data);
  DispatchTypes(FloatTypes{}, input_name(0), data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* source = data.data<T>();
    const T* weight = kWeighted ? Input(kWeightsInput).template data<T>() : nullptr;
    Tensor* output = Output(0);
    output->Resize(output_dims);
    T* destination = output->mutable_data<T>();
    std::fill(destination, destination + output->numel(), T(0));
    int64_t position = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      T* out_row = destination + static_cast<int64_t>(r) * row_size;
      for (int64_t j = 0; j < lengths[r]; ++j, ++position) {
        const int64_t row = kSparse ? source_rows[position] : position;
        const T* in_row = source + row * row_size;
        if (kWeighted) {
          for (int64_t k = 0; k < row_size; ++k) out_row[k] += weight[position] * in_row[k];
        } else {
          for (int64_t k = 0; k < row_size; ++k) out_row[k] += in_row[k];
        }
      }
      if (kMean && lengths[r] > 0) {
        const T scale = T(1) / static_cast<T>(lengths[r]);
        for (int64_t k = 0; k < row_size; ++k) out_row[k] *= scale;
      }
    }
  });
}

// ---- gradient ----

template <bool kMean>
void LengthsReducerGradientOp<kMean>::RunOnDevice() {
  // Inputs: dOUTPUT, LENGTHS and, for the Sparse* ops, INDICES, which the CPU
  // kernel does not need (Caffe2 passes it for its GPU kernels).
  const Tensor& output_grad = Input(0);
  int64_t total = 0;
  const std::vector<int64_t> lengths = ReadLengths(*this, 1, Input(1), &total);
  EnforceHasRows(*this, 0, output_grad);
  DOPPIO_ENFORCE(output_grad.dim(0) == static_cast<int64_t>(lengths.size()), "'", input_name(0),
                 "' has ", output_grad.dim(0), " rows but '", input_name(1), "' has ",
                 lengths.size(), " segments");
  if (InputSize() > 2) {
    DOPPIO_ENFORCE(Input(2).numel() == total, "the lengths in '", input_name(1), "' sum to ", total,
                   " but '", input_name(2), "' has ", Input(2).numel(), " indices");
  }
  const int64_t row_size = output_grad.SizeFromDim(1);
  const std::vector<int64_t> grad_dims = ShapeOfRows({total}, output_grad);

  DispatchTypes(FloatTypes{}, input_name(0), output_grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* source = output_grad.data<T>();
    Tensor* data_grad = Output(0);
    data_grad->Resize(grad_dims);
    T* destination = data_grad->mutable_data<T>();
    int64_t position = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      const T* in_row = source + static_cast<int64_t>(r) * row_size;
      const T scale =
          (kMean && lengths[r] > 0) ? T(1) / static_cast<T>(lengths[r]) : T(1);
      for (int64_t j = 0; j < lengths[r]; ++j, ++position) {
        T* out_row = destination + position * row_size;
        for (int64_t k = 0; k < row_size; ++k) out_row[k] = scale * in_row[k];
      }
    }
  });
}

template <bool kWithMainInput>
void SparseLengthsWeightedSumGradientOp<kWithMainInput>::RunOnDevice() {
  const Tensor& weights = Input(0);
  const Tensor& output_grad = Input(1);
  int64_t total = 0;
  const std::vector<int64_t> lengths = ReadLengths(*this, 2, Input(2), &total);
  EnforceVector(*this, 0, weights);
  EnforceHasRows(*this, 1, output_grad);
  EnforceSameType(*this, 1, output_grad, 0, weights);
  DOPPIO_ENFORCE(
      weights.numel() == total && output_grad.dim(0) == static_cast<int64_t>(lengths.size()), "'",
      input_name(0), "' has ", weights.numel(), " weights and '", input_name(1), "' ",
      output_grad.dim(0), " rows, but '", input_name(2), "' has ", lengths.size(),
      " segments over ", total, " indices");
  const int64_t row_size = output_grad.SizeFromDim(1);
  std::vector<int64_t> rows;  // DATA rows, for dWEIGHTS
  if (kWithMainInput) {
    const Tensor& data = Input(3);
    EnforceHasRows(*this, 3, data);
    DOPPIO_ENFORCE(data.SizeFromDim(1) == row_size, "'", input_name(3), "' has rows of ",
                   data.SizeFromDim(1), " elements but the gradient rows have ", row_size);
    EnforceSameType(*this, 1, output_grad, 3, data);
    const Tensor& indices = Input(4);
    DOPPIO_ENFORCE(indices.numel() == total, "'", input_name(4), "' has ", indices.numel(),
                   " indices but the lengths sum to ", total);
    rows = ReadRowIndices(*this, 4, indices, data.dim(0), 3);
  }
  DispatchTypes(FloatTypes{}, input_name(1), output_grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = output_grad.data<T>();
    const T* w = weights.data<T>();
    Tensor* values = Output(0);
    values->Resize(ShapeOfRows({total}, output_grad));
    T* out = values->mutable_data<T>();
    T* dw = nullptr;
    if (kWithMainInput) {
      Output(1)->Resize({total});
      dw = Output(1)->template mutable_data<T>();
    }
    int64_t position = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      const T* segment_grad = dy + static_cast<int64_t>(r) * row_size;
      for (int64_t j = 0; j < lengths[r]; ++j, ++position) {
        T* row = out + position * row_size;
        for (int64_t k = 0; k < row_size; ++k) row[k] = w[position] * segment_grad[k];
        if (kWithMainInput) {
          const T* data_row = Input(3).template data<T>() + rows[position] * row_size;
          T dot = 0;
          for (int64_t k = 0; k < row_size; ++k) dot += segment_grad[k] * data_row[k];
          dw[position] = dot;
        }
      }
    }
  });
}

// ---- registration ----

using LengthsSumOp = LengthsReducerOp<false, false>;
using LengthsMeanOp = LengthsReducerOp<false, true>;
using SparseLengthsSumOp = LengthsReducerOp<true, false>;
using SparseLengthsMeanOp = LengthsReducerOp<true, true>;
REGISTER_CPU_OPERATOR(LengthsSum, LengthsSumOp);
REGISTER_CPU_OPERATOR(LengthsMean, LengthsMeanOp);
REGISTER_CPU_OPERATOR(SparseLengthsSum, SparseLengthsSumOp);
REGISTER_CPU_OPERATOR(SparseLengthsMean, SparseLengthsMeanOp);
using SparseLengthsWeightedSumOp = LengthsReducerOp<true, false, true>;
REGISTER_CPU_OPERATOR(SparseLengthsWeightedSum, SparseLengthsWeightedSumOp);
REGISTER_CPU_OPERATOR(SparseLengthsWeightedSumGradient, SparseLengthsWeightedSumGradientOp<false>);
REGISTER_CPU_OPERATOR(SparseLengthsWeightedSumWithMainInputGradient,
                      SparseLengthsWeightedSumGradientOp<true>);

using LengthsSumGradientOp = LengthsReducerGradientOp<false>;
using LengthsMeanGradientOp = LengthsReducerGradientOp<true>;
REGISTER_CPU_OPERATOR(LengthsSumGradient, LengthsSumGradientOp);
REGISTER_CPU_OPERATOR(LengthsMeanGradient, LengthsMeanGradientOp);
REGISTER_CPU_OPERATOR(SparseLengthsSumGradient, LengthsSumGradientOp);
REGISTER_CPU_OPERATOR(SparseLengthsMeanGradient, LengthsMeanGradientOp);

namespace {

void DenseLengthsSchema(OpSchema& schema) {
  schema.NumInputs(2)
      .NumOutputs(1)
      .TensorInferenceFunction(InferRowsPerEntry(1))
      .Input(0, "DATA", "float32 or float64 tensor of rank >= 1")
      .Input(1, "LENGTHS", "int32 or int64 vector of non-negative lengths summing to "
                           "DATA.shape[0]")
      .Output(0, "OUTPUT", "[len(LENGTHS)] + DATA.shape[1:]");
}

void SparseLengthsSchema(OpSchema& schema) {
  schema.NumInputs(3)
      .NumOutputs(1)
      .TensorInferenceFunction(InferRowsPerEntry(2))
      .Input(0, "DATA", "float32 or float64 tensor of rank >= 1")
      .Input(1, "INDICES", "int32 or int64 vector of rows of DATA, each in "
                           "[0, DATA.shape[0])")
      .Input(2, "LENGTHS", "int32 or int64 vector of non-negative lengths summing to "
                           "len(INDICES)")
      .Output(0, "OUTPUT", "[len(LENGTHS)] + DATA.shape[1:]");
}

void LengthsGradientSchema(OpSchema& schema) {
  schema.Input(0, "SEGMENT_GRADS", "gradient of the forward output")
      .Input(1, "LENGTHS", "the forward op's LENGTHS")
      .Output(0, "DATA_GRAD", "one row per reduced row: [sum(LENGTHS)] + row shape");
}

}  // namespace

OPERATOR_SCHEMA(LengthsSum)
    .Apply(DenseLengthsSchema)
    .Doc("OUTPUT[r] = sum of the LENGTHS[r] rows of DATA that follow segment r-1's.");
OPERATOR_SCHEMA(LengthsMean)
    .Apply(DenseLengthsSchema)
    .Doc("OUTPUT[r] = mean of the LENGTHS[r] rows of DATA that follow segment r-1's "
         "(0 for an empty segment).");
OPERATOR_SCHEMA(SparseLengthsSum)
    .Apply(SparseLengthsSchema)
    .Doc("Gather DATA at INDICES, then LengthsSum: OUTPUT[r] is the sum of "
         "DATA[INDICES[j]] over segment r's run of INDICES. Its DATA gradient is sparse.");
OPERATOR_SCHEMA(SparseLengthsMean)
    .Apply(SparseLengthsSchema)
    .Doc("Gather DATA at INDICES, then LengthsMean (0 for an empty segment). Its DATA "
         "gradient is sparse.");

OPERATOR_SCHEMA(SparseLengthsWeightedSum)
    .NumInputs(4)
    .NumOutputs(1)
    .TensorInferenceFunction(InferRowsPerEntry(3))
    .Arg("grad_on_weights", "(bool, default 0) 1: the gradient also covers WEIGHTS")
    .Input(0, "DATA", "float32 or float64 tensor of rank >= 1")
    .Input(1, "WEIGHTS", "one weight per index, DATA's type")
    .Input(2, "INDICES", "int32 or int64 vector of rows of DATA")
    .Input(3, "LENGTHS", "int32 or int64 lengths summing to len(INDICES)")
    .Output(0, "OUTPUT", "[len(LENGTHS)] + DATA.shape[1:]")
    .Doc(
        "OUTPUT[r] = sum over segment r of WEIGHTS[j] * DATA[INDICES[j]]. Its DATA "
        "gradient is sparse; WEIGHTS get one with grad_on_weights=1.");
OPERATOR_SCHEMA(SparseLengthsWeightedSumGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .Input(0, "WEIGHTS", "the forward op's WEIGHTS")
    .Input(1, "SEGMENT_GRADS", "gradient of the forward output")
    .Input(2, "LENGTHS", "the forward op's LENGTHS")
    .Output(0, "DATA_GRAD", "values of the DATA GradientSlice: WEIGHTS[j] * SEGMENT_GRADS[r]")
    .Doc("Gradient of SparseLengthsWeightedSum for DATA.");
OPERATOR_SCHEMA(SparseLengthsWeightedSumWithMainInputGradient)
    .NumInputs(5)
    .NumOutputs(2)
    .Input(0, "WEIGHTS", "the forward op's WEIGHTS")
    .Input(1, "SEGMENT_GRADS", "gradient of the forward output")
    .Input(2, "LENGTHS", "the forward op's LENGTHS")
    .Input(3, "DATA", "the forward op's DATA")
    .Input(4, "INDICES", "the forward op's INDICES")
    .Output(0, "DATA_GRAD", "values of the DATA GradientSlice")
    .Output(1, "WEIGHTS_GRAD", "<SEGMENT_GRADS[r], DATA[INDICES[j]]> per index")
    .Doc("Gradient of SparseLengthsWeightedSum with grad_on_weights=1.");

OPERATOR_SCHEMA(LengthsSumGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .Apply(LengthsGradientSchema)
    .Doc("Gradient of LengthsSum: each row of segment r gets SEGMENT_GRADS[r].");
OPERATOR_SCHEMA(LengthsMeanGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .Apply(LengthsGradientSchema)
    .Doc("Gradient of LengthsMean: each row of segment r gets SEGMENT_GRADS[r] / "
         "LENGTHS[r].");
OPERATOR_SCHEMA(SparseLengthsSumGradient)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .Apply(LengthsGradientSchema)
    .Input(2, "INDICES", "(optional) the forward op's INDICES; only its count is checked")
    .Doc("Values of SparseLengthsSum's DATA GradientSlice: row j of segment r is "
         "SEGMENT_GRADS[r].");
OPERATOR_SCHEMA(SparseLengthsMeanGradient)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .Apply(LengthsGradientSchema)
    .Input(2, "INDICES", "(optional) the forward op's INDICES; only its count is checked")
    .Doc("Values of SparseLengthsMean's DATA GradientSlice: row j of segment r is "
         "SEGMENT_GRADS[r] / LENGTHS[r].");

namespace {

// Caffe2's LengthsOpGetGradient: (dOUTPUT, LENGTHS[, INDICES]) -> rows.
template <bool kSparse>
class GetLengthsReducerGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string gradient_type = Def().type() + "Gradient";
    if (!kSparse) {
      return SingleGradientDef(gradient_type, "", {GO(0), I(1)}, {GI(0)});
    }
    const std::string values = GI_V(0);
    SetSparse(0, I(1), values);
    return SingleGradientDef(gradient_type, "", {GO(0), I(2), I(1)}, {values});
  }
};

// Caffe2's input order: (WEIGHTS, dOUTPUT, LENGTHS[, DATA, INDICES]).
class GetWeightedSumGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string values = GI_V(0);
    SetSparse(0, I(2), values);
    if (ArgumentHelper(Def()).GetSingle<bool>("grad_on_weights", false)) {
      return SingleGradientDef("SparseLengthsWeightedSumWithMainInputGradient", "",
                               {I(1), GO(0), I(3), I(0), I(2)}, {values, GI(1)});
    }
    return SingleGradientDef("SparseLengthsWeightedSumGradient", "", {I(1), GO(0), I(3)}, {values});
  }
};

}  // namespace

REGISTER_GRADIENT(SparseLengthsWeightedSum, GetWeightedSumGradient);
SHOULD_NOT_DO_GRADIENT(SparseLengthsWeightedSumGradient, "it is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(SparseLengthsWeightedSumWithMainInputGradient, "it is itself a gradient op");
REGISTER_GRADIENT(LengthsSum, GetLengthsReducerGradient<false>);
REGISTER_GRADIENT(LengthsMean, GetLengthsReducerGradient<false>);
REGISTER_GRADIENT(SparseLengthsSum, GetLengthsReducerGradient<true>);
REGISTER_GRADIENT(SparseLengthsMean, GetLengthsReducerGradient<true>);

SHOULD_NOT_DO_GRADIENT(LengthsSumGradient, "it is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(LengthsMeanGradient, "it is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(SparseLengthsSumGradient, "it is itself a gradient op");
SHOULD_NOT_DO_GRADIENT(SparseLengthsMeanGradient, "it is itself a gradient op");

}  // namespace doppio
