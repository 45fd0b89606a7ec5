// Segment reductions over runs of rows given by LENGTHS, as in Caffe2's
// lengths_reducer_ops: segment r covers the next LENGTHS[r] rows (of DATA, or
// of DATA gathered at INDICES for the Sparse* ops) and is reduced to one
// output row.
//
//   LengthsSum(DATA, LENGTHS)                  sum over DATA's rows
//   LengthsMean(DATA, LENGTHS)                 mean (0 for an empty segment)
//   SparseLengthsSum(DATA, INDICES, LENGTHS)   sum over DATA[INDICES[...]]
//   SparseLengthsMean(DATA, INDICES, LENGTHS)  mean over DATA[INDICES[...]]
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

template <bool kSparse, bool kMean>
class LengthsReducerOp final : public Operator<CPUContext> {
 public:
  LengthsReducerOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;

 private:
  static constexpr int kIndicesInput = 1;
  static constexpr int kLengthsInput = kSparse ? 2 : 1;
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
