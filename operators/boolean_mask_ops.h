// Boolean masks (Caffe2's boolean_mask_ops).
//
// BooleanMask: the rows of a tensor where a bool mask is true (and their
// indices).
//
// SequenceMask: sets the masked entries of a tensor viewed as rows x
// columns to fill_val (-inf by default, so a softmax gives them no weight),
// Caffe2's op for attention. Its gradient is the same op with grad=1, which
// fills zeros.
#pragma once

#include <string>

#include "core/operator.h"

namespace doppio {

// Input X (float32) and, for modes 'sequence' and 'window', an int32 vector
// (lengths / window centres, one per row). The row index is the product of
// the dims before `axis` (with `batch`: between batch and axis, each batch
// masked alike); the column index is the product of the dims from axis on.
// Modes: sequence (column >= length), window (outside centre +- radius),
// upper (column > row), lower (column < row), upperdiag (>=), lowerdiag
// (<=). repeat_from_axis (sequence mode only): dims from there on are one
// masked element.
class SequenceMaskOp final : public Operator<CPUContext> {
 public:
  SequenceMaskOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  enum class Mode { kSequence, kWindow, kUpper, kLower, kUpperDiag, kLowerDiag };
  bool Masked(int64_t row, int64_t column, const int32_t* per_row, int64_t rows) const;

  Mode mode_;
  int axis_;
  int radius_;
  float fill_;
  bool has_batch_;
  int batch_;
  bool has_repeat_;
  int repeat_from_;
};

// Inputs data (any type, [N, ...]) and mask (bool [N]); outputs the rows
// where mask is true, [count, ...], and optionally their indices (int64).
class BooleanMaskOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
