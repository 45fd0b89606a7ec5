// Segment reductions over runs of rows given by LENGTHS, as in Caffe2's
// lengths_reducer_ops: segment r covers the next LENGTHS[r] rows (of DATA, or
// of DATA gathered at INDICES for the Sparse* ops) and is reduced to one
// output row.
//
//   LengthsSum(DATA, LENGTHS)                  sum over DATA's rows
//   LengthsMean(DATA, LENGTHS)                 mean (0 for an empty segment)
//   SparseLengthsSum(DATA, INDICES, LENGTHS)   sum over DATA[INDICES[...]]
//   SparseLengthsMean(DATA, INDICES, LENGTHS)  mean over DATA[INDICES[...]]
//   SparseLengthsWeightedSum(DATA, WEIGHTS, INDICES, LENGTHS)
//                                              sum of WEIGHTS[j] * DATA[INDICES[j]]
//
// Gradients: LengthsSumGradient / LengthsMeanGradient (dOUTPUT, LENGTHS) give
// one row per reduced row; the Sparse* gradients (dOUTPUT, LENGTHS[, INDICES])
// give the same rows as the values of a GradientSlice whose indices are
// INDICES.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace doppio {

// kWeighted: SparseLengthsWeightedSum(DATA, WEIGHTS, INDICES, LENGTHS),
// each gathered row scaled by its weight before the sum.
template <bool kSparse, bool kMean, bool kWeighted = false>
class LengthsReducerOp final : public Operator<CPUContext> {
 public:
  LengthsReducerOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;

 private:
  static constexpr int kWeightsInput = 1;
  static constexpr int kIndicesInput = kWeighted ? 2 : 1;
  static constexpr int kLengthsInput = kSparse ? kIndicesInput + 1 : 1;
};

// SparseLengthsWeightedSum's DATA gradient values, in Caffe2's op and input
// order: SparseLengthsWeightedSumGradient(WEIGHTS, dOUTPUT, LENGTHS) gives
// row j = WEIGHTS[j] * dOUTPUT[segment of j]; with kWithMainInput,
// SparseLengthsWeightedSumWithMainInputGradient(WEIGHTS, dOUTPUT, LENGTHS,
// DATA, INDICES) also gives dWEIGHTS[j] = <dOUTPUT[segment], DATA[INDICES[j]]>
// (the forward op's grad_on_weights=1).
template <bool kWithMainInput>
class SparseLengthsWeightedSumGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

template <bool kMean>
class LengthsReducerGradientOp final : public Operator<CPUContext> {
 public:
  LengthsReducerGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;
};

// LENGTHS (input `input` of `op`, an int32 or int64 vector) as int64 values,
// each checked to be >= 0. `total` receives their sum.
std::vector<int64_t> ReadLengths(const OperatorBase& op, int input, const Tensor& lengths,
                                 int64_t* total);

}  // namespace doppio
