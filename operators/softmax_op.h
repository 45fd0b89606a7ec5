// Softmax and LogSoftmax over the input viewed as a 2-D matrix, and their
// gradients.
//
// As in Caffe2, `axis` (default 1) splits X's dims into rows
// (dims [0, axis)) and columns (dims [axis, ndim)); each row is normalized.
// Caffe2 itself has no LogSoftmax; ours follows ONNX's LogSoftmax (opsets
// 1-12), which has exactly this axis rule, so ONNX models map onto it.
#pragma once

#include <cstdint>
#include <string>

#include "core/operator.h"

namespace doppio {

// y[r, :] = softmax(x[r, :]) (or its log) for each of `rows` rows of `cols`
// elements. y may alias x. Shared with SoftmaxWithLoss.
template <typename T>
void SoftmaxRows(int64_t rows, int64_t cols, const T* x, T* y, bool log_output);

// `tensor` seen as [rows, cols] split at `axis` (negative counts from the
// end); errors name the op and `blob`.
struct RowsAndCols {
  int64_t rows = 1;
  int64_t cols = 1;
};
RowsAndCols SplitAtAxis(const OperatorBase& op, const std::string& blob, const Tensor& tensor,
                        int axis);

// The `axis` argument (default 1) of the four ops, CPU and CUDA.
int ReadSoftmaxAxis(const OperatorBase& op);

// Input X (float32 or float64); output Y of X's shape: softmax of each row,
// or its log when kLog.
template <bool kLog>
class SoftmaxFamilyOp final : public Operator<CPUContext> {
 public:
  SoftmaxFamilyOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};
using SoftmaxOp = SoftmaxFamilyOp<false>;
using LogSoftmaxOp = SoftmaxFamilyOp<true>;

// Inputs Y (the forward output) and dY; output dX.
//   softmax:     dX = Y * (dY - sum_row(dY * Y))
//   log-softmax: dX = dY - exp(Y) * sum_row(dY)
template <bool kLog>
class SoftmaxFamilyGradientOp final : public Operator<CPUContext> {
 public:
  SoftmaxFamilyGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};
using SoftmaxGradientOp = SoftmaxFamilyGradientOp<false>;
using LogSoftmaxGradientOp = SoftmaxFamilyGradientOp<true>;

}  // namespace doppio
