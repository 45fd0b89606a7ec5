// Caffe2's ReduceFront{Sum,Mean,Max} and ReduceBack{Sum,Mean,Max}: reduce
// the first (front) or last (back) `num_reduce_dim` dims of a float tensor.
// The input is seen as a [rows, cols] matrix split at that point; the front
// ops reduce the rows (output dims: the rest), the back ops the columns.
// An optional int32 `lengths` input (one per output element) limits each
// reduction to its first `length` entries: Sum over none is 0; Mean and Max
// need at least one.
//
// Gradients: ...Gradient(dY, X or X's shape as int64, [lengths]) for Sum
// and Mean (dY, spread; divided by the length for Mean), and
// ...MaxGradient(dY, X, Y, [lengths]) (dY where X equals the max).
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace doppio {

enum class FrontBackSide { kFront, kBack };
enum class FrontBackReducer { kSum, kMean, kMax };

// The [rows, cols] split of `dims` for the op: `reduced` is the number of
// elements folded into each output, `kept` the number of outputs.
struct FrontBackSplit {
  int64_t reduced = 1;
  int64_t kept = 1;
  std::vector<int64_t> output_dims;
};

FrontBackSplit SplitForReduce(const std::vector<int64_t>& dims, int num_reduce_dim,
                              FrontBackSide side);

template <FrontBackSide kSide, FrontBackReducer kKind>
class ReduceFrontBackOp final : public Operator<CPUContext> {
 public:
  ReduceFrontBackOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int num_reduce_dim_;
};

template <FrontBackSide kSide, FrontBackReducer kKind>
class ReduceFrontBackGradientOp final : public Operator<CPUContext> {
 public:
  ReduceFrontBackGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int num_reduce_dim_;
};

}  // namespace doppio
