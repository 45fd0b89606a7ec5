// Utility operators: Copy (deep copy of any dtype), CopyOnDeviceLike (Copy's
// gradient, as in Caffe2), Alias (shares storage), Print (dumps a tensor
// to stdout or a file), and Caffe2's small shape and index utilities: Size,
// Range, LengthsToShape, LengthsGather, NanCheck.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "core/operator.h"

namespace doppio {

// Y = a deep copy of X: shape, dtype and elements, strings included.
class CopyOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Y = output 0 shares input 0's storage; writing one changes the other.
class AliasOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class PrintOp final : public Operator<CPUContext> {
 public:
  PrintOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

  // The file `to_file` writes to: the input blob's name with '/' (name
  // scopes) replaced by '_', plus ".log", in the current directory.
  static std::string LogFileName(const std::string& blob_name);

 private:
  std::ostream& Stream();

  int64_t limit_;
  int every_n_;
  int64_t runs_ = 0;
  std::unique_ptr<std::ofstream> file_;
};

// Y = the number of elements of X, an int64 scalar.
class SizeOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs (stop), (start, stop) or (start, stop, step): scalars of one type
// (int32, int64, float32 or float64). Y = [start, start + step, ...) below
// stop (above it for a negative step), as numpy.arange.
class RangeOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Input lengths [K], all equal; Y = int32 [K, lengths[0]].
class LengthsToShapeOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs items [N, ...], lengths [K] (summing to N) splitting items into
// segments, indices [M] (int32 or int64); Y = the segments indices[0], ...,
// concatenated.
class LengthsGatherOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Y = X (in place, or a copy); an error when X holds a NaN or infinity.
class NanCheckOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
